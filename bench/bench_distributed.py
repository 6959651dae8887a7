"""The distributed dedup on 1 and 2 worker processes, against one machine, with a paper estimate.

Generates ``--docs`` synthetic documents (`gpusimhash.datasets.synth`, default spec, seed 1)
into ``--parts`` JSONL partitions (and one file for the single-machine run), then times
`gpusimhash.distributed.dedup` (128 bits, radius 3) on a process cluster of each ``--workers``
count (`gpusimhash.distributed.local_cluster`: one task at a time per worker, and its compiled
loops and FAISS on one thread, so N workers use N cores), then on one worker whose loops use
every core (what ``gpusimhash dedup --workers 1`` starts), each after a warm-up run that
imports and compiles on every worker. Records the wall time and stage times, each worker's
peak resident memory (sampled every 0.2 s), the bytes each shuffle produced (per document and
table), the bytes the workers actually fetched from each other, and whether the kept
documents and the duplicates report are byte-identical to the single-machine `dedup_file` on
the one file. Before each run it measures how many cores the machine gives (`free_cores`: a
pure-Python loop in 2 processes at once vs in 1), since other jobs on a shared machine decide
what 2 workers can gain, and during each run the cores other jobs used (`OtherJobs`: the
machine's busy time from /proc/stat less this process's and its workers'). From the measured
per-document costs it prints what 100M and 1B documents would need. With ``--repeat N`` the
configurations run N times, interleaved; every run is recorded and the fastest of each
configuration are compared.

    flock /work/scratch/bench.lock python bench/bench_distributed.py [--docs 2000000] [--repeat 2]

Writes ``bench/results/distributed_cpu.json`` (``distributed_cpu_<docs>.json`` for other sizes).

With ``--corpus PATH`` (one document per line, gzip or not), it compares instead the cluster
with one machine on the corpus's first lines, at each of ``--sizes`` and each of ``--settings``
(``defaults``: 256 bits, verified cosine 0.8, the single machine's candidates, the feature
join; ``128r3``: 128 bits, radius 3, the codes' join): for each worker count (1, then 2; one
core each), a process cluster is started and warmed up once, then for each size and setting
`dedup_file` on one JSONL file runs, its compiled loops and FAISS on every core and then on one
core, right before the distributed dedup of the same documents in ``--parts`` JSONL partitions.
The distributed dedup runs twice: its stages spread over the workers, and on the driver, every
task a call in this process but the fingerprints, which 2 workers take
(`gpusimhash.distributed.dedup`'s ``driver_input_bytes``);
"default" marks the one `gpusimhash.distributed._pipeline.runs_on_driver` chooses (by the
input's bytes, and the local cluster's threads against this process's, for the join the
settings take). With ``--repeat N``
all of it runs N times, interleaved, and the table compares the medians. Records each run's wall time, stages, the load average and the
cores other jobs used, the cluster's time against one machine's on every core (what the
cluster gave on this machine) and on one core (what each worker, of one core, added), and
whether the kept documents and duplicates report are byte-identical:

    python bench/bench_distributed.py --corpus /work/shared/data/pypi_summaries.txt.gz \
        --sizes 50000 100000 200000 --repeat 3

``--worker-threads T`` gives each worker T threads, and runs one machine on T threads in place
of one core: on a machine of at least 2T + 1 cores, the workers, the driver and the scheduler
no longer share the cores one machine uses, as on a cluster of machines of T cores each.

Writes ``bench/results/distributed_real.json`` (``--result`` names another file there).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_lines, print_table, write_json

from gpusimhash._cpu import _threads
from gpusimhash.cli.options import use_threads
from gpusimhash.datasets.synth import CorpusSpec, generate
from gpusimhash.dedup.options import DedupOptions
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.distributed import _components as components
from gpusimhash.distributed import dedup, local_cluster
from gpusimhash.distributed._join_stage import TASK_DOCUMENTS
from gpusimhash.distributed._pipeline import DRIVER_INPUT_BYTES, runs_on_driver, whole_index
from gpusimhash.distributed._run import piece

# 4 tables of 32 bits. Radius 7 (8 tables of 16 bits) gives ~100M candidate pairs of codes at 2M
# of these documents (1.45M at 200k, 8M at 500k): over 13 GB in one worker, verified one by one
SETTINGS = {"bits": 128, "max_distance": 3, "id_field": "id"}


def write_corpus(folder: Path, n_docs: int, n_parts: int) -> Path:
    """Write the corpus as ``n_parts`` JSONL files and as ``all.jsonl`` (once per size)."""
    done = folder / "complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [n_docs * p // n_parts for p in range(n_parts + 1)]
    parts = folder / "parts"
    parts.mkdir(exist_ok=True)
    with open(folder / "all.jsonl", "w") as whole:
        handle = None
        for doc in generate(CorpusSpec(n_docs=n_docs, seed=1)):
            part = next(p for p in range(n_parts) if doc.id < bounds[p + 1])
            if doc.id == bounds[part]:
                if handle is not None:
                    handle.close()
                handle = open(parts / f"part-{part:03d}.jsonl", "w")  # noqa: SIM115
            line = json.dumps({"id": doc.id, "text": doc.text}) + "\n"
            whole.write(line)
            handle.write(line)
        handle.close()
    done.write_text("")
    return folder


def _spin(_: int) -> float:
    """A fixed amount of pure-Python work; return its wall seconds."""
    start = time.perf_counter()
    total = 0
    for i in range(4_000_000):
        total += i % 7
    return time.perf_counter() - start


def free_cores() -> float:
    """How many cores this machine gives now: the same work in 2 processes at once, vs in 1.

    2.0 when both cores are free; about 1 when another job keeps a core busy (then no
    2-worker run can be twice as fast as 1 worker, whatever the code).
    """
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [0, 1])  # start both
        start = time.perf_counter()
        pool.map(_spin, [0], chunksize=1)
        one = time.perf_counter() - start
        start = time.perf_counter()
        pool.map(_spin, [0, 1], chunksize=1)
        two = time.perf_counter() - start
    return round(2 * one / two, 2)


class OtherJobs:
    """The cores other jobs used while a block ran: the machine's busy time less ours.

    Ours is this process's and its children's (the nannies and workers) CPU time; the machine's
    is from ``/proc/stat`` (Linux; None elsewhere).
    """

    def __enter__(self):
        self._start = self._sample()
        return self

    def __exit__(self, *exc) -> None:
        end = self._sample()
        self.cores = None
        if self._start is not None and end is not None:
            (busy0, ours0, wall0), (busy1, ours1, wall1) = self._start, end
            self.cores = round(max(0.0, (busy1 - busy0) - (ours1 - ours0)) / (wall1 - wall0), 2)

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        import psutil

        try:
            fields = Path("/proc/stat").read_text().split("\n")[0].split()[1:9]
        except OSError:
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields)
        busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
        me = psutil.Process()
        ours = 0.0
        for process in [me, *me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                ours += times.user + times.system
        return busy, ours, time.perf_counter()


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _fetched(dask_worker) -> int:
    return int(sum(entry["total"] for entry in dask_worker.transfer_incoming_log))


class PeakMemory:
    """Sample every worker's and the driver's resident memory in a thread; keep each peak."""

    def __init__(self, client) -> None:
        self.client, self.peak, self._stop = client, {}, threading.Event()
        self.driver = _rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.driver = max(self.driver, _rss())
            # a worker busy or restarting is sampled next time
            with contextlib.suppress(Exception):
                for worker, rss in self.client.run(_rss).items():
                    self.peak[worker] = max(self.peak.get(worker, 0), rss)
            self._stop.wait(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_cluster(n_workers: int, threads: int, folder: Path, out: Path, repeat: int) -> dict:
    """Time the distributed dedup on a fresh local cluster of ``n_workers`` processes.

    Each worker runs one task at a time, its compiled loops and FAISS on ``threads`` threads.
    """
    from distributed import Client

    with (
        local_cluster(n_workers, threads, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        # the stages on the workers, whatever the input's size (not the driver)
        dedup(folder / "warmup", out / "warmup", client=client, driver_input_bytes=-1, **SETTINGS)
        idle = client.run(_rss)
        driver_idle = _rss()
        load = os.getloadavg()
        fetched_before = sum(client.run(_fetched).values())
        with PeakMemory(client) as memory, OtherJobs() as others:
            start = time.perf_counter()
            result = dedup(
                folder / "parts",
                out / _name(n_workers, threads, repeat),
                client=client,
                driver_input_bytes=-1,
                **SETTINGS,
            )
            seconds = time.perf_counter() - start
        fetched = sum(client.run(_fetched).values()) - fetched_before
    summary = result.summary
    return {
        "workers": n_workers,
        "threads_per_worker": threads,
        "repeat": repeat,
        "load_average_before": load,
        "other_jobs_cores": others.cores,
        "seconds": round(seconds, 2),
        "timings_s": summary["timings_s"],
        "peak_rss_per_worker_bytes": sorted(memory.peak.values()),
        "idle_rss_per_worker_bytes": sorted(idle.values()),
        "driver_peak_rss_bytes": memory.driver,
        "driver_idle_rss_bytes": driver_idle,
        "shuffle": summary["distributed"],
        "fetched_between_workers_bytes": fetched,
        "results": summary["results"],
    }


def _name(n_workers: int, threads: int, repeat: int) -> str:
    """Output folder of a run."""
    return f"workers{n_workers}" + (f"-threads{threads}" if threads > 1 else "") + f"-{repeat}"


def _best(rows: list[dict], workers: int, every_core: bool = False) -> dict | None:
    """The fastest run of a configuration (1 thread per worker, or every core)."""
    mine = [
        r for r in rows if r["workers"] == workers and (r["threads_per_worker"] > 1) == every_core
    ]
    return min(mine, key=lambda r: r["seconds"]) if mine else None


def same_outputs(single: Path, spread: Path) -> bool:
    """Whether the kept documents and the duplicates report are byte-identical."""
    kept = b"".join(p.read_bytes() for p in sorted((spread / "kept").iterdir()))
    return kept == (single / "kept.jsonl").read_bytes() and (
        (spread / "duplicates.jsonl").read_bytes() == (single / "duplicates.jsonl").read_bytes()
    )


def _pieces(sources: int, n_shards: int, seed: int) -> list:
    """A source task of `piece_seconds`: 1,000 random edges split by node shard."""
    edges = np.random.default_rng(seed).integers(0, 10**9, (1000, 2))
    return components.by_node(edges, 0, n_shards)


def piece_seconds(n_shards: int = 64) -> float:
    """Time one shuffle of ``n_shards`` sources to as many shards, per piece task.

    Every shuffle of the distributed dedup is one small task per (source, destination) pair, so
    its scheduler time grows as the square of the tasks per stage: this measures that cost on 2
    local workers.
    """
    from distributed import Client

    with local_cluster(2, 1, dashboard_address=":0") as cluster, Client(cluster) as client:
        best = float("inf")
        for attempt in range(2):
            start = time.perf_counter()
            split = [
                client.submit(_pieces, n_shards, n_shards, attempt * n_shards + i, pure=False)
                for i in range(n_shards)
            ]
            pieces = [[client.submit(piece, x, j) for x in split] for j in range(n_shards)]
            done = [client.submit(np.concatenate, p) for p in pieces]
            client.gather([client.submit(len, d) for d in done])
            best = min(best, (time.perf_counter() - start) / n_shards**2)
    return best


def estimate(rows: list[dict], n_docs: int, piece_s: float) -> list[dict]:
    """What 100M and 1B documents need, from the measured per-document costs."""
    one = _best(rows, 1)
    two = _best(rows, 2) or one
    efficiency = one["seconds"] / (2 * two["seconds"]) if two is not one else 1.0
    core_seconds = one["seconds"] / n_docs  # one worker process, one core
    growth = one["peak_rss_per_worker_bytes"][0] - one["idle_rss_per_worker_bytes"][0]
    memory_per_doc = growth / n_docs
    shuffle = one["shuffle"]
    moved = ("collapse_shuffle_bytes", "table_shuffle_bytes", "label_shuffle_bytes")
    shuffle_per_doc = sum(shuffle[k] for k in moved) / n_docs
    driver_per_doc = (one["driver_peak_rss_bytes"] - one["driver_idle_rss_bytes"]) / n_docs
    # collapse, tables, edges, label steps (the last round's lookahead too), pairs, members,
    # work, routing to groups
    shuffles = 1 + shuffle["tables"] + 1 + 2 * (shuffle["label_rounds"] + 1) + 4
    out = []
    for total in (100_000_000, 1_000_000_000):
        workers = max(2, -(-int(total * memory_per_doc) // (16 * 2**30)))  # 16 GiB per worker
        out.append(
            {
                "documents": f"{total:,}",
                "workers (16 GiB each)": workers,
                "worker memory GiB": round(total * memory_per_doc / workers / 2**30, 1),
                "shuffle GB": round(total * shuffle_per_doc / 1e9, 1),
                "driver GiB": round(total * driver_per_doc / 2**30, 1),
                "hours": round(total * core_seconds / (workers * efficiency) / 3600, 2),
                "scheduler hours": round(
                    shuffles * max(2 * workers, -(-total // TASK_DOCUMENTS)) ** 2 * piece_s / 3600,
                    2,
                ),
            }
        )
    return out


CORPUS_SETTINGS = {"defaults": {}, "128r3": {"bits": 128, "max_distance": 3}}
# the two ways to run a corpus: its stages spread over the workers, or every task on the driver
RUN_AS = {"stages": -1, "on the driver": 1 << 62}


def write_lines(folder: Path, lines: list[str], n_parts: int) -> Path:
    """Write lines as ``{"text": ...}`` records: ``all.jsonl`` and ``n_parts`` partitions."""
    done = folder / "complete"
    if done.exists():
        return folder
    (folder / "parts").mkdir(parents=True, exist_ok=True)
    records = [json.dumps({"text": line}) + "\n" for line in lines]
    (folder / "all.jsonl").write_text("".join(records))
    bounds = [len(records) * p // n_parts for p in range(n_parts + 1)]
    for p in range(n_parts):
        chunk = records[bounds[p] : bounds[p + 1]]
        (folder / "parts" / f"part-{p:03d}.jsonl").write_text("".join(chunk))
    done.write_text("")
    return folder


def _timed(run) -> tuple[float, object, float | None, list[float]]:
    """Run ``run()``: its wall seconds, result, other jobs' cores and the load average before."""
    load = list(os.getloadavg())
    with OtherJobs() as others:
        start = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - start
    return seconds, result, others.cores, load


def compare_on_corpus(args: argparse.Namespace) -> None:
    """One machine against clusters of 1 and 2 workers, on the corpus's first lines.

    One cluster at a time (several clients in one process share none of their machinery
    safely): for each worker count, a cluster is started and warmed up, then for each size and
    setting, ``--repeat`` times, one machine runs (every core, then one), right before the
    cluster on the same documents, its stages spread and then on the driver. The table compares
    medians; "default" is what ``dedup`` chose by the input's bytes.
    """
    from distributed import Client

    lines = load_lines(args.corpus, max(args.sizes))
    warm = write_lines(args.data / "real-warmup", lines[:2000], 2)
    folders = {
        size: write_lines(args.data / f"real-{size}-{args.parts}", lines[:size], args.parts)
        for size in sorted(args.sizes)
    }
    rows: list[dict] = []
    for n in args.workers:
        with (
            local_cluster(n, args.worker_threads, dashboard_address=":0") as cluster,
            Client(cluster) as client,
        ):
            for name in args.settings:
                options = CORPUS_SETTINGS[name]
                dedup_file(warm / "all.jsonl", args.data / "out-warm" / name, **options)
                for mode, limit in RUN_AS.items():
                    out = args.data / "out-warm" / f"{name}-{n}-{mode}"
                    dedup(warm / "parts", out, client=client, driver_input_bytes=limit, **options)
            for size, folder in folders.items():
                for name in args.settings:
                    for repeat in range(args.repeat):
                        found = _one_machine_then_cluster(
                            client, n, size, name, folder, args.data, args.worker_threads
                        )
                        rows += [row | {"repeat": repeat} for row in found]
                        print(*((r["run"], r["seconds"]) for r in found), size, name, flush=True)
    table = _corpus_table(rows, args.worker_threads)
    print_table(table, list(table[0]))
    path = write_json(
        args.result,
        {
            "corpus": str(args.corpus),
            "sizes": sorted(args.sizes),
            "parts": args.parts,
            "repeat": args.repeat,
            "driver_input_bytes": DRIVER_INPUT_BYTES,
            "worker_threads": args.worker_threads,
            "settings": {name: CORPUS_SETTINGS[name] for name in args.settings},
            "runs": rows,
            "table": table,
            "shared_machine": "2 cores shared with other jobs: see each run's load average",
        },
    )
    print(f"wrote {path}")


def _worker_machine(threads: int) -> str:
    """Name one machine on a worker's threads, the run each worker is compared with."""
    return "one machine, 1 core" if threads == 1 else f"one machine, {threads} threads"


def _corpus_table(rows: list[dict], worker_threads: int) -> list[dict]:
    """Median seconds of each run per size, setting and workers, and the ratios of the medians."""
    share = "vs one core" if worker_threads == 1 else f"vs {worker_threads} threads"
    table = []
    keys = sorted({(r["docs"], r["settings"], r["cluster_workers"]) for r in rows})
    for docs, name, n in keys:
        runs = [
            r for r in rows if (r["docs"], r["settings"], r["cluster_workers"]) == (docs, name, n)
        ]
        median = {
            run: float(np.median([r["seconds"] for r in runs if r["run"] == run]))
            for run in dict.fromkeys(r["run"] for r in runs)
        }
        one_machine, one_worker = median["one machine"], median[_worker_machine(worker_threads)]
        chosen = next(r for r in runs if r.get("chosen"))["run"]
        for run, seconds in median.items():
            cluster = [r for r in runs if r["run"] == run and r["workers"]]
            table.append(
                {
                    "docs": docs,
                    "settings": name,
                    "workers": n,
                    "run": run + (" (default)" if run == chosen else ""),
                    "median s": round(seconds, 2),
                    "range s": "{:.2f}-{:.2f}".format(
                        *(f(r["seconds"] for r in runs if r["run"] == run) for f in (min, max))
                    ),
                    "vs one machine": round(one_machine / seconds, 2) if cluster else "-",
                    share: round(one_worker / seconds, 2) if cluster else "-",
                    "identical": all(r["identical_to_single"] for r in cluster) if cluster else "-",
                }
            )
    return table


def _one_machine_then_cluster(
    client, n: int, size: int, name: str, folder: Path, data: Path, threads: int
) -> list[dict]:
    """Run one machine on every core and on a worker's threads, then the cluster of ``n`` both ways.

    The workers have ``threads`` threads each: against one machine on as many, the ratio says
    what each worker added; against one machine on every core, what the cluster gave on this
    machine.
    """
    options = CORPUS_SETTINGS[name]
    out = data / f"out-real-{size}" / name
    single = _one_machine(folder, out / f"single-{n}", options, size, name, None)
    one_worker = _one_machine(folder, out / f"single-{n}-{threads}", options, size, name, threads)
    single["run"], one_worker["run"] = "one machine", _worker_machine(threads)
    rows = [single, one_worker]
    bits = options.get("bits", 256)
    joins = {key: value for key, value in options.items() if key != "bits"}
    chosen = runs_on_driver(
        sorted((folder / "parts").iterdir()),
        client=client,
        whole_index=whole_index(DedupOptions(**joins), bits),
    )
    for mode, limit in RUN_AS.items():
        target = out / f"workers{n}-{mode}"
        seconds, spread, others, load = _timed(
            functools.partial(
                dedup,
                folder / "parts",
                target,
                client=client,
                driver_input_bytes=limit,
                **options,
            )
        )
        rows.append(
            {
                "docs": size,
                "settings": name,
                "run": mode,
                "workers": n,
                "chosen": (mode == "on the driver") == chosen,
                "seconds": round(seconds, 2),
                "timings_s": spread.summary["timings_s"],
                "results": spread.summary["results"],
                "join": spread.summary["distributed"]["join"],
                "fingerprinted_on_workers": spread.summary["distributed"][
                    "fingerprinted_on_workers"
                ],
                "load_average_before": load,
                "other_jobs_cores": others,
                "identical_to_single": same_outputs(out / f"single-{n}", target),
            }
        )
    single["chosen"] = one_worker["chosen"] = False
    return [row | {"cluster_workers": n} for row in rows]


def _one_machine(
    folder: Path, out: Path, options: dict, size: int, name: str, threads: int | None
) -> dict:
    """Run `dedup_file` on the corpus's one file, its loops and FAISS on ``threads`` (or all)."""
    cores = _threads.threads()
    use_threads(threads)
    try:
        seconds, result, others, load = _timed(
            functools.partial(dedup_file, folder / "all.jsonl", out, **options)
        )
    finally:
        use_threads(cores)
    return {
        "docs": size,
        "settings": name,
        "workers": 0,
        "threads": threads or cores,
        "seconds": round(seconds, 2),
        "timings_s": result.summary["timings_s"],
        "results": result.summary["results"],
        "candidates": result.summary["settings"]["candidates"],
        "load_average_before": load,
        "other_jobs_cores": others,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2_000_000)
    parser.add_argument("--parts", type=int, default=16)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--data", type=Path, default=Path("/tmp/gpusimhash-bench-distributed"))
    parser.add_argument("--no-single", action="store_true", help="skip the one-machine run")
    parser.add_argument(
        "--no-all-cores", action="store_true", help="skip the 1-worker run on every core"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the configurations this many times, interleaved (the best of each compared; "
        "with --corpus, the medians)",
    )
    parser.add_argument("--corpus", type=Path, help="compare with one machine on this corpus")
    parser.add_argument(
        "--result",
        default="distributed_real.json",
        help="with --corpus, the file under bench/results/ to write",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[50_000, 100_000, 200_000])
    parser.add_argument(
        "--worker-threads",
        type=int,
        default=1,
        help="with --corpus: each worker's threads, and those of the one-machine run it is "
        "compared with",
    )
    parser.add_argument(
        "--settings", nargs="+", choices=sorted(CORPUS_SETTINGS), default=["defaults", "128r3"]
    )
    args = parser.parse_args()
    if args.corpus is not None:
        compare_on_corpus(args)
        return
    load_before = os.getloadavg()
    folder = write_corpus(args.data / str(args.docs), args.docs, args.parts)
    write_corpus(folder / "warmup", 2_000, 2)
    (folder / "warmup" / "all.jsonl").unlink(missing_ok=True)
    (folder / "warmup" / "warmup").mkdir(exist_ok=True)
    for part in sorted((folder / "warmup" / "parts").iterdir()):
        part.replace(folder / "warmup" / "warmup" / part.name)
    out = args.data / f"out-{args.docs}"
    runs = [(n, 1) for n in args.workers]
    n_cores = os.cpu_count() or 1
    if not args.no_all_cores and n_cores > 1:
        runs.append((1, n_cores))
    rows = []
    for repeat in range(args.repeat):
        for n, threads in runs:
            cores = free_cores()
            row = run_cluster(n, threads, folder, out, repeat) | {"free_cores_before": cores}
            rows.append(row)
    single = None
    if not args.no_single:
        with OtherJobs() as others:
            start = time.perf_counter()
            result = dedup_file(folder / "all.jsonl", out / "single", **SETTINGS)
            seconds = time.perf_counter() - start
        single = {
            "seconds": round(seconds, 2),
            "other_jobs_cores": others.cores,
            "timings_s": result.summary["timings_s"],
            "results": result.summary["results"],
        }
        for row in rows:
            row["identical_to_single"] = same_outputs(
                out / "single",
                out / _name(row["workers"], row["threads_per_worker"], row["repeat"]),
            )
    base = _best(rows, 1)["seconds"]
    best_every_core = _best(rows, 1, every_core=True)
    every_core = best_every_core["seconds"] if best_every_core else None
    table = [
        {
            "workers": r["workers"],
            "threads": r["threads_per_worker"],
            "load": round(r["load_average_before"][0], 2),
            "free cores": r["free_cores_before"],
            "others' cores": r["other_jobs_cores"],
            "seconds": r["seconds"],
            "speedup": round(base / r["seconds"], 2),
            "vs 1 worker, every core": (
                round(every_core / r["seconds"], 2) if every_core is not None else "-"
            ),
            "fingerprint/join/cluster/write s": "/".join(
                f"{r['timings_s'][k]:.1f}" for k in ("fingerprint", "join", "cluster", "write")
            ),
            "peak GiB per worker": " ".join(
                f"{b / 2**30:.2f}" for b in r["peak_rss_per_worker_bytes"]
            ),
            "table B/doc/table": r["shuffle"]["table_shuffle_bytes_per_document_per_table"],
            "collapse B/doc": round(r["shuffle"]["collapse_shuffle_bytes"] / args.docs, 1),
            "labels B/doc": round(r["shuffle"]["label_shuffle_bytes"] / args.docs, 1),
            "label rounds": r["shuffle"]["label_rounds"],
            "driver peak GiB": round(r["driver_peak_rss_bytes"] / 2**30, 2),
            "fetched MB": round(r["fetched_between_workers_bytes"] / 1e6, 1),
            "identical": r.get("identical_to_single", "not checked"),
        }
        for r in rows
    ]
    print_table(table, list(table[0]))
    best = {
        "1 worker": base,
        "2 workers": (_best(rows, 2) or {}).get("seconds"),
        "1 worker, every core": every_core,
    }
    if best["2 workers"]:
        best["2 workers vs 1"] = round(base / best["2 workers"], 2)
    print(f"best of {args.repeat} run(s) each: {best}")
    if single is not None:
        stages = " ".join(f"{k} {v:.1f}" for k, v in single["timings_s"].items())
        print(
            f"one machine (dedup_file, same settings): {single['seconds']} s ({stages}); "
            f"other jobs used {single['other_jobs_cores']} cores meanwhile"
        )
    piece_s = piece_seconds()
    print(f"scheduler time per piece task (64 x 64 shuffle, 2 workers): {piece_s * 1e3:.2f} ms")
    paper = estimate(rows, args.docs, piece_s)
    print_table(paper, list(paper[0]))
    name = "distributed_cpu.json" if args.docs == 2_000_000 else f"distributed_cpu_{args.docs}.json"
    path = write_json(
        name,
        {
            "docs": args.docs,
            "parts": args.parts,
            "settings": SETTINGS,
            "load_average_before": load_before,
            "repeat": args.repeat,
            "runs": rows,
            "best_seconds": best,
            "single_machine": single,
            "load_average_after": os.getloadavg(),
            "piece_task_seconds": piece_s,
            "estimate": paper,
            "estimate_assumptions": (
                "per-document core seconds of the 1-worker run, divided by workers times the "
                "measured 2-worker efficiency; worker memory from the 1-worker peak minus its "
                "idle resident memory; 16 GiB per worker; shuffle bytes (collapse, tables, label "
                "propagation) as measured per document; driver memory from the 1-worker run's "
                "driver peak minus its idle resident memory, per document (the removed "
                "documents' rows and the duplicates report's columns); scheduler time: every "
                "shuffle is one task per (source, destination), tasks per stage "
                "max(2 workers, documents / 16M), at the measured seconds per piece task"
            ),
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
