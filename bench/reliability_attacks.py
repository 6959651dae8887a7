"""Adversarial runs of the command line: disk full, kills, links, mount points, hostile files.

Every trial runs ``python -m gpusimhash`` in a fresh process and is classified:

* crash: a traceback, or an exit status other than 0, 1, 2 and 130 (a signal included);
* hang: still running at the trial's time limit (then killed);
* data lost: a user's file changed or gone, or ``--out`` holding neither the earlier run's
  complete outputs nor the new run's;
* clean error: exit 1 or 2 with one line ``gpusimhash: error: ...`` that names the problem (the
  words each attack expects);
* worked: the run did what it should (exit 0 and the expected outputs) where success is right.

Disk full uses a small tmpfs mounted in a user namespace (``unshare -rm``) where the kernel
allows it, and RLIMIT_FSIZE (a file-size limit: EFBIG) everywhere. Prints a table and writes
``bench/results/reliability_attacks.json``.

    python bench/reliability_attacks.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_json

CLI = [sys.executable, "-m", "gpusimhash"]
FAST = ["-q", "--bits", "64", "--max-distance", "3"]
MANIFEST = ".gpusimhash-outputs.json"


@dataclass
class Outcome:
    """One trial's result."""

    rc: int | None
    stderr: str
    seconds: float
    peak_mb: float
    hang: bool = False

    def crashed(self) -> bool:
        """A traceback or an exit status no clean run gives."""
        return not self.hang and ("Traceback" in self.stderr or self.rc not in (0, 1, 2, 130))

    def clean_error(self, *words: str) -> bool:
        """Exit 1 or 2 with one error line holding every word."""
        lines = [line for line in self.stderr.strip().splitlines() if line.strip()]
        return (
            self.rc in (1, 2)
            and not self.crashed()
            and bool(lines)
            and re.match(r"gpusimhash(?: [\w-]+)*: error: ", lines[-1]) is not None
            and all(w in lines[-1] for w in words)
        )


@dataclass
class Tally:
    """The table's row of one attack."""

    attack: str
    trials: int = 0
    crashes: int = 0
    hangs: int = 0
    data_lost: int = 0
    clean_errors: int = 0
    worked: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome, *, lost: bool = False, clean: bool = False, ok: bool = False):
        """Count one trial."""
        self.trials += 1
        self.crashes += outcome.crashed()
        self.hangs += outcome.hang
        self.data_lost += lost
        self.clean_errors += clean and not outcome.crashed()
        self.worked += ok and not outcome.crashed()
        if outcome.crashed() or outcome.hang or lost or not (clean or ok):
            last = (outcome.stderr.strip().splitlines() or [""])[-1][:240]
            self.notes.append(f"rc={outcome.rc} hang={outcome.hang} lost={lost}: {last}")


def run(
    args: list[str],
    *,
    timeout: float = 300,
    preexec: Callable[[], None] | None = None,
    kill_after: float | None = None,
) -> Outcome:
    """Run a command; its exit status, standard error, time and peak memory (MB)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [str(a) for a in args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=preexec,  # noqa: PLW1509 (the timer thread only signals)
        )
        timer = None
        if kill_after is not None:
            timer = threading.Timer(kill_after, process.send_signal, (signal.SIGKILL,))
            timer.start()
        deadline, hang = start + timeout, False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                hang = True
                break
            time.sleep(0.02)
        if timer is not None:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    rc = process.returncode
    if kill_after is not None and rc == -signal.SIGKILL:
        rc = 130  # killed by the attack, not a crash of its own
    return Outcome(rc, stderr, time.perf_counter() - start, usage.ru_maxrss / 1024, hang)


def dedup(source: Path | str, out: Path | str, *extra: str) -> list[str]:
    """The dedup command line."""
    return [*CLI, "dedup", str(source), "--out", str(out), *FAST, *extra]


def corpus(path: Path, n: int, seed: int) -> Path:
    """Write a JSONL corpus of ``n`` documents, a third of them near-copies."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    with path.open("w", encoding="utf-8") as stream:
        base = []
        for i in range(n):
            if base and rng.random() < 0.33:
                text = rng.choice(base)
            else:
                text = " ".join(rng.choice(words) for _ in range(40))
                base.append(text)
            stream.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    return path


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under a folder and its SHA-256 (summary and report left out: timings)."""
    if not folder.is_dir():
        return {}
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            name = path.relative_to(folder).as_posix()
            if name in {"summary.json", MANIFEST}:
                out[name] = "present"
            else:
                out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def complete(folder: Path, expected: dict[str, str]) -> bool:
    """Whether a folder holds exactly one complete set of outputs: ``expected``."""
    return snapshot(folder) == expected


def fsize_limit(nbytes: int) -> Callable[[], None]:
    """A child's limit on the size of any file it writes (EFBIG past it, no signal)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return limit


def can_mount() -> bool:
    """Whether a tmpfs can be mounted in a user namespace here."""
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /mnt"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


# ---------------------------------------------------------------- attacks


def disk_full(work: Path, sizes: list[int]) -> list[Tally]:
    """Outputs that do not fit: a small tmpfs (ENOSPC) and RLIMIT_FSIZE (EFBIG)."""
    small = corpus(work / "small.jsonl", 300, 1)
    big = corpus(work / "big.jsonl", 20_000, 2)
    tallies = []
    fsize = Tally("disk full (RLIMIT_FSIZE)")
    for size in sizes:
        out = work / f"fsize{size}"
        first = run(dedup(small, out))
        before = snapshot(out)
        outcome = run(dedup(big, out, "--overwrite"), preexec=fsize_limit(size))
        lost = first.rc != 0 or not complete(out, before)
        fsize.add(outcome, lost=lost, clean=outcome.clean_error("file size limit"))
    tallies.append(fsize)
    if can_mount():
        tmpfs = Tally("disk full (tmpfs in a namespace)")
        for size in sizes:
            mount = work / f"tmpfs{size}"
            mount.mkdir()
            probe = work / f"probe{size}.json"
            snap = (
                f'{sys.executable} -c \'import sys,json;sys.path.insert(0,"{Path(__file__).parent}");'
                "from reliability_attacks import snapshot;from pathlib import Path;"
                f'json.dump(snapshot(Path("{mount / "out"}")),open("{probe}%s","w"))\''
            )
            script = (
                f"mount -t tmpfs -o size={size} none {mount} && "
                f"{{ {' '.join(dedup(small, mount / 'out', '--no-report'))}; {snap % '.before'}; "
                f"{' '.join(dedup(big, mount / 'out', '--overwrite'))}; rc=$?; {snap % ''}; "
                "exit $rc; }"
            )
            outcome = run(["unshare", "-rm", "sh", "-c", script])
            try:
                lost = json.loads(Path(f"{probe}.before").read_text()) != json.loads(
                    probe.read_text()
                )
            except OSError:
                lost = True
            tmpfs.add(outcome, lost=lost, clean=outcome.clean_error("No space left"))
        tallies.append(tmpfs)
    return tallies


def kills(work: Path, trials: int, seed: int) -> list[Tally]:
    """SIGKILL at a random moment of an --overwrite run: the old or the new outputs, whole."""
    old_corpus = corpus(work / "old.jsonl", 2_000, 3)
    new_corpus = corpus(work / "new.jsonl", 30_000, 4)
    reference = work / "reference"
    done = run(dedup(new_corpus, reference, "--pairs", "--no-report"))
    expected_new = snapshot(reference)
    rng = random.Random(seed)
    tally = Tally("SIGKILL at a random moment (--overwrite)")
    for trial in range(trials):
        out = work / f"killed{trial}"
        run(dedup(old_corpus, out, "--pairs", "--no-report"))
        expected_old = snapshot(out)
        moment = rng.uniform(0.05, done.seconds * 1.1)
        outcome = run(
            dedup(new_corpus, out, "--pairs", "--no-report", "--overwrite"), kill_after=moment
        )
        whole = complete(out, expected_old) or complete(out, expected_new)
        after = run(dedup(old_corpus, out, "--pairs", "--no-report", "--overwrite"))
        stray = [p.name for p in work.iterdir() if p.name.startswith(f".killed{trial}.")]
        lost = not whole or after.rc != 0 or bool(stray) or not complete(out, expected_old)
        tally.add(outcome, lost=lost, ok=not lost)
    return [tally]


def links(work: Path) -> list[Tally]:
    """Symbolic links as --out, as outputs of ours and as the input."""
    source = corpus(work / "links.jsonl", 300, 5)
    tally = Tally("symbolic links")
    mine = work / "mine.txt"
    mine.write_text("the user's")
    # a dangling link as --out: written through to its target
    dangling = work / "dangling"
    dangling.symlink_to(work / "dangling-target")
    outcome = run(dedup(source, dangling))
    tally.add(outcome, ok=outcome.rc == 0 and (work / "dangling-target" / "kept.jsonl").is_file())
    # a link to an earlier run's folder, overwritten
    outcome = run(dedup(source, dangling, "--overwrite"))
    tally.add(outcome, ok=outcome.rc == 0 and dangling.is_symlink())
    # our report.md replaced by a link to a user's file; kept.jsonl too
    for name in ("report.md", "kept.jsonl"):
        out = work / f"link-{name}"
        run(dedup(source, out))
        (out / name).unlink()
        (out / name).symlink_to(mine)
        outcome = run(dedup(source, out, "--overwrite"))
        lost = mine.read_text() != "the user's" or not (out / name).is_symlink()
        tally.add(outcome, lost=lost, clean=outcome.clean_error("is a link that no earlier run"))
    # a folder in place of report.md holding a user's file
    out = work / "folder-report"
    run(dedup(source, out))
    (out / "report.md").unlink()
    (out / "report.md").mkdir()
    (out / "report.md" / "notes.txt").write_text("the user's")
    outcome = run(dedup(source, out, "--overwrite"))
    lost = not (out / "report.md" / "notes.txt").is_file()
    tally.add(outcome, lost=lost, clean=outcome.clean_error("is a folder that no earlier run"))
    # the input as a link, and a link loop as the input
    linked = work / "input-link.jsonl"
    linked.symlink_to(source)
    outcome = run(dedup(linked, work / "via-link"))
    tally.add(outcome, ok=outcome.rc == 0)
    loop = work / "loop.jsonl"
    loop.symlink_to(loop)
    outcome = run(dedup(loop, work / "loop-out"))
    tally.add(outcome, clean=outcome.clean_error("loop.jsonl"))
    return [tally]


def mount_points(work: Path, kill_trials: int, seed: int) -> list[Tally]:
    """An empty mount point as --out: written, overwritten, killed mid-run."""
    if not can_mount():
        return [Tally("mount point as --out", notes=["no user-namespace mounts here: skipped"])]
    source = corpus(work / "mount.jsonl", 3_000, 6)
    other = corpus(work / "mount2.jsonl", 3_000, 7)
    tally = Tally("mount point as --out")
    rng = random.Random(seed)
    here = Path(__file__).resolve().parent
    for trial in range(1 + kill_trials):
        mount = work / f"mnt{trial}"
        mount.mkdir()
        result = work / f"mnt{trial}.json"
        kill = trial > 0
        # the second run is killed after a random moment (timeout -s KILL) in the kill trials
        second = " ".join(dedup(other, mount, "--overwrite", "--no-report"))
        if kill:
            second = f"timeout -s KILL {rng.uniform(0.3, 6.0):.2f} {second}"
        snap = (
            f'{sys.executable} -c \'import sys,json;sys.path.insert(0,"{here}");'
            "from reliability_attacks import snapshot;from pathlib import Path;"
            f'json.dump(snapshot(Path("{mount}")),open("{result}.%s","w"))\''
        )
        script = (
            f"mount -t tmpfs none {mount} && {' '.join(dedup(source, mount, '--no-report'))} && "
            f"{snap % 'old'} && {second}; rc=$?; {snap % 'new'}; "
            f"{' '.join(dedup(source, mount, '--overwrite', '--no-report'))} && "
            f"{snap % 'again'}; exit $rc"
        )
        outcome = run(["unshare", "-rm", "sh", "-c", script])
        if kill and outcome.rc == 137:
            outcome.rc = 130
        try:
            old, new, again = (
                json.loads(Path(f"{result}.{k}").read_text()) for k in ("old", "new", "again")
            )
        except OSError:
            tally.add(outcome, lost=True)
            continue
        inside = [n for n in new if n.startswith(".gpusimhash-") and n != MANIFEST]
        lost = (
            "kept.jsonl" not in old
            or "kept.jsonl" not in new
            and not inside  # killed mid-move: the earlier outputs wait in .gpusimhash-old
            or again != old
        )
        tally.add(outcome, lost=lost, ok=not lost)
    return [tally]


def hostile_csv(work: Path, quick: bool) -> list[Tally]:
    """CSV that tries to fill memory or confuse the reader."""
    tally = Tally("hostile CSV/TSV")
    lines = 1_000_000 if quick else 10_800_000
    field = work / "field.csv"
    with field.open("wb") as stream:  # one quoted field of ~100 bytes x lines, never closed early
        stream.write(b'id,text\n1,"start\n')
        block = b"x" * 98 + b"\n"
        for _ in range(lines // 10_000):
            stream.write(block * 10_000)
        stream.write(b'"\n2,b\n')
    outcome = run(dedup(field, work / "field-out"))
    words = ("a record longer than 268,435,456 bytes",) if not quick else ()
    expect_error = not quick  # 100 MB fits under the limit: read as one record
    tally.add(
        outcome,
        clean=expect_error and outcome.clean_error(*words),
        ok=not expect_error and outcome.rc == 0,
    )
    tally.notes.append(
        f"one quoted field over {lines:,} lines ({field.stat().st_size / 2**20:,.0f} MiB): "
        f"peak {outcome.peak_mb:,.0f} MB, {outcome.seconds:.1f} s"
    )
    cases = {
        "unterminated.csv": (b'id,text\n1,"never closed\n2,b\n', "unterminated quote"),
        "repeated.csv": (b"text,text\na,b\n", "repeats column"),
        "ragged.csv": (b"id,text\n1,a,b\n", "3 fields, the header has 2"),
        "badutf8.csv": (b"id,text\n1,\xff\xfe\n", "not valid UTF-8"),
        "nul.csv": (b"id,text\n1,a\x00b\n", ""),
        "notext.csv": (b"id,body\n1,a\n", "no column 'text'"),
        "empty.csv": (b"", ""),
        "bom-crlf.tsv": (b'\xef\xbb\xbfid\ttext\r\n1\t"a\r\nb"\r\n', ""),
    }
    for name, (data, words) in cases.items():
        path = work / name
        path.write_bytes(data)
        outcome = run(dedup(path, work / f"{name}-out"))
        tally.add(outcome, clean=bool(words) and outcome.clean_error(words), ok=outcome.rc == 0)
    return [tally]


def hostile_jsonl(work: Path) -> list[Tally]:
    """JSONL that is deep, huge, not Unicode, not objects, or one endless line."""
    tally = Tally("hostile JSONL")
    cases = {
        "deep.jsonl": ('{"text": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "nested"),
        "bigint.jsonl": ('{"text": "a", "n": ' + "9" * 5000 + "}\n", "digits"),
        "surrogate.jsonl": ('{"text": "a \\ud800 b"}\n', "surrogate"),
        "array.jsonl": ("[1, 2]\n", "expected a JSON object"),
        "notext.jsonl": ('{"body": "a"}\n', "no field 'text'"),
        "nontext.jsonl": ('{"text": 5}\n', "text"),
        "nan-id.jsonl": ('{"id": NaN, "text": "a"}\n{"id": 1, "text": "b"}\n', "id"),
        "dup-ids.jsonl": ('{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', ""),
    }
    for name, (text, words) in cases.items():
        path = work / name
        path.write_text(text, encoding="utf-8")
        outcome = run(dedup(path, work / f"{name}-out"))
        tally.add(outcome, clean=bool(words) and outcome.clean_error(words), ok=outcome.rc == 0)
    endless = work / "endless.jsonl"  # 300 MB without a newline
    with endless.open("wb") as stream:
        for _ in range(300):
            stream.write(b"x" * (1 << 20))
    outcome = run(dedup(endless, work / "endless-out"))
    tally.add(outcome, clean=outcome.clean_error("longer than 268,435,456 bytes"))
    tally.notes.append(f"300 MB without a newline: peak {outcome.peak_mb:,.0f} MB")
    return [tally]


def hostile_parquet(work: Path) -> list[Tally]:
    """Parquet of every type, of differing schemas, damaged, truncated, empty."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dedup"))
    from test_dedup_parquet_schema import every_type, texts  # the test suite's columns

    tally = Tally("hostile Parquet")
    n = 2_400
    table = pa.table({"text": texts(n), **every_type(n, np.random.default_rng(0))})
    source = work / "every.parquet"
    pq.write_table(table, source, row_group_size=700)
    for annotate in ([], ["--annotate"]):
        out = work / f"every-out{len(annotate)}"
        args = ["--output-format", "parquet", "--batch-size", "1000", *annotate]
        outcome = run(dedup(source, out, *args))
        name = "annotated.parquet" if annotate else "kept.parquet"
        ok = outcome.rc == 0 and pq.read_schema(out / name).field("decimal").type == pa.decimal128(
            38, 3
        )
        tally.add(outcome, ok=ok)
    differing = work / "differing"
    differing.mkdir()
    for name, type_ in (("a", pa.int32()), ("b", pa.int64())):
        n_column = pa.array([1], type_)
        pq.write_table(pa.table({"text": ["a b"], "n": n_column}), differing / f"{name}.parquet")
    outcome = run(dedup(differing / "*.parquet", work / "ab-out", "--output-format", "parquet"))
    tally.add(outcome, clean=outcome.clean_error("b.parquet: column 'n' is int64", "a.parquet"))
    data = (work / "every.parquet").read_bytes()
    rng = random.Random(8)
    for trial in range(8):
        mutant = bytearray(data)
        for _ in range(4):
            mutant[rng.randrange(8, len(data) - 8)] ^= 0xFF
        path = work / f"flip{trial}.parquet"
        path.write_bytes(bytes(mutant))
        outcome = run(dedup(path, work / f"flip{trial}-out"))
        tally.add(outcome, clean=outcome.clean_error("parquet"), ok=outcome.rc == 0)
    (work / "truncated.parquet").write_bytes(data[: len(data) // 2])
    outcome = run(dedup(work / "truncated.parquet", work / "truncated-out"))
    tally.add(outcome, clean=outcome.clean_error("truncated.parquet"))
    pq.write_table(table.slice(0, 0), work / "zero.parquet")
    outcome = run(dedup(work / "zero.parquet", work / "zero-out"))
    tally.add(outcome, ok=outcome.rc == 0)
    ids = pa.array([2**64 - 1 - i // 2 * 2 for i in range(400)], pa.uint64())
    pq.write_table(pa.table({"text": texts(400), "key": ids}), work / "u64.parquet")
    outcome = run(
        dedup(
            work / "u64.parquet",
            work / "u64-out",
            "--id-field",
            "key",
            "--output-format",
            "parquet",
            "--pairs",
        )
    )
    tally.add(outcome, ok=outcome.rc == 0, clean=outcome.clean_error("key"))
    return [tally]


def numeric_edges(work: Path) -> list[Tally]:
    """Options at and past their limits: one clean line each (or a run that works)."""
    source = corpus(work / "numbers.jsonl", 200, 9)
    tally = Tally("numeric edge cases (options)")
    bad = [
        (["--bits", "0"], "bits"),
        (["--bits", "7"], "bits"),
        (["--bits", "99999999999999999999"], "bits"),
        (["--max-distance", "-1"], "distance"),
        (["--max-distance", "100000"], "distance"),
        (["--min-cosine", "nan"], "cosine"),
        (["--min-cosine", "inf"], "cosine"),
        (["--min-cosine", "1.5"], "cosine"),
        (["--seed", str(2**32)], "seed"),
        (["--seed", "-1"], "seed"),
        (["--batch-size", "0"], "batch"),
        (["--batch-size", "-5"], "batch"),
        (["--threads", "0"], "threads"),
        (["--candidate-recall", "1.5"], "recall"),
    ]
    for extra, words in bad:
        args = [*CLI, "dedup", str(source), "--out", str(work / "numbers-out"), "-q", *extra]
        outcome = run(args)
        tally.add(outcome, clean=outcome.clean_error(words), ok=outcome.rc == 0)
    for extra in (["--min-cosine", "-0.0"], ["--min-cosine", "1.0"], ["--batch-size", "1"]):
        out = work / f"numbers-ok{len(tally.notes)}{extra[-1]}"
        outcome = run([*CLI, "dedup", str(source), "--out", str(out), "-q", *extra])
        tally.add(outcome, ok=outcome.rc == 0)
    return [tally]


# dedup with an address-space limit set after start-up (the loaded libraries and threads reserve
# address space of their own): the limit bounds what the run itself allocates
LIMITED_DEDUP = """
import resource, sys
from gpusimhash.cli import main
source, out, extra = sys.argv[1:]
status = open("/proc/self/status").read().split("VmSize:")[1]
limit = int(status.split()[0]) * 1024 + int(extra)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.exit(main(["dedup", source, "--out", out, "-q", "--bits", "64", "--max-distance", "3"]))
"""


def huge_document(work: Path, quick: bool) -> list[Tally]:
    """One text line of 100M one-letter tokens under a 2 GB address-space limit."""
    tally = Tally("one huge document (2 GiB of address space past start-up)")
    tokens = 10_000_000 if quick else 100_000_000
    path = work / "huge.txt"
    letters = b"abcdefghijklmnopqrstuvwxyz"
    with path.open("wb") as stream:
        stream.write(b"a short line\n")
        chunk = b" ".join(letters[i % 26 : i % 26 + 1] for i in range(1_000_000)) + b" "
        for _ in range(tokens // 1_000_000):
            stream.write(chunk)
        stream.write(b"\n")

    outcome = run(
        [sys.executable, "-c", LIMITED_DEDUP, path, work / "huge-out", str(2 << 30)], timeout=900
    )
    clean = outcome.clean_error("huge.txt, document 2", "bytes of text")
    tally.add(outcome, clean=clean, ok=quick and outcome.rc == 0)
    tally.notes.append(f"{tokens:,} tokens: peak {outcome.peak_mb:,.0f} MB")
    return [tally]


def index_formats(work: Path) -> list[Tally]:
    """Index bundles with unknown keys or a newer format; ivf with fewer codes than nlist."""
    from gpusimhash.io import bundle

    tally = Tally("index: unknown keys, newer format, ivf nlist")
    source = corpus(work / "index.jsonl", 100, 10)
    folder = work / "idx"
    run([*CLI, "index", "build", str(source), "--out", str(folder), "-q", "--bits", "64"])
    manifest_path = folder / "manifest.json"
    original = manifest_path.read_text()
    changes = {
        "unknown top-level key": (lambda m: m["metadata"].update(stemmer="porter"), "'stemmer'"),
        "unknown featurizer key": (
            lambda m: m["metadata"]["featurizer"].update(stopwords=["the"]),
            "featurizer.stopwords",
        ),
        "newer format": (lambda m: m.update(format_version=99), "newer than this release"),
    }
    for change, words in changes.values():
        manifest = json.loads(original)
        change(manifest)
        body = {k: manifest[k] for k in ("format", "format_version", "files", "metadata")}
        manifest["manifest_sha256"] = bundle._self_checksum(body)
        manifest_path.write_text(json.dumps(manifest))
        outcome = run([*CLI, "index", "query", str(folder), "a query text", "-q"])
        tally.add(outcome, clean=outcome.clean_error(words))
    manifest_path.write_text(original)
    outcome = run(
        [*CLI, "index", "build", str(source), "--out", str(work / "ivf"), "--kind", "ivf", "-q"]
    )
    tally.add(outcome, clean=outcome.clean_error("nlist"))
    return [tally]


def main() -> None:
    """Run every attack; print the table; write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller files, fewer trials")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILL trials")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    tallies: list[Tally] = []
    with tempfile.TemporaryDirectory(prefix="gpusimhash-attacks-") as temporary:
        work = Path(temporary)
        attacks = [
            ("disk", lambda w: disk_full(w, [65_536, 400_000, 1_500_000])),
            ("kills", lambda w: kills(w, 3 if args.quick else args.kills, args.seed)),
            ("links", links),
            ("mounts", lambda w: mount_points(w, 1 if args.quick else 4, args.seed)),
            ("csv", lambda w: hostile_csv(w, args.quick)),
            ("jsonl", hostile_jsonl),
            ("parquet", hostile_parquet),
            ("numbers", numeric_edges),
            ("huge", lambda w: huge_document(w, args.quick)),
            ("index", index_formats),
        ]
        for name, attack in attacks:
            folder = work / name
            folder.mkdir()
            begun = time.perf_counter()
            found = attack(folder)
            tallies.extend(found)
            print(f"{name}: {time.perf_counter() - begun:.0f} s", file=sys.stderr, flush=True)
            shutil.rmtree(folder, ignore_errors=True)
    header = ("attack", "trials", "crashes", "hangs", "data lost", "clean errors", "worked")
    rows = [
        (t.attack, t.trials, t.crashes, t.hangs, t.data_lost, t.clean_errors, t.worked)
        for t in tallies
    ]
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))
    for t in tallies:
        for note in t.notes:
            print(f"  {t.attack}: {note}")
    path = write_json(
        "reliability_attacks.json",
        {
            "note": "machine shared with other engineers; every trial a fresh process",
            "seconds": round(time.time() - started, 1),
            "quick": args.quick,
            "table": [dict(zip(header, row, strict=True)) for row in rows],
            "notes": {t.attack: t.notes for t in tallies if t.notes},
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
