"""Where a first run's time goes: compiling, cache loads, imports, the report's plots.

Each round runs, in fresh processes, with Numba's cache pointed at a new empty folder
(``NUMBA_CACHE_DIR``, which gpusimhash leaves alone when set), Matplotlib's configuration and
font cache at another (``MPLCONFIGDIR``), and a new output folder:

- ``dedup cold``: ``python -m gpusimhash dedup`` on the bundled sample, empty cache (the first
  run after installing); ``dedup warm``: the same command again on that cache;
- ``fingerprint cold`` / ``fingerprint warm``: a process that imports gpusimhash and
  fingerprints three short texts, on a new empty cache and again;
- ``import``: ``python -X importtime`` of the warm fingerprint process and of the warm dedup
  command: import seconds by package (self time summed over each package's modules).

The dedup and fingerprint processes are `_startup_probe.py`, which times every compilation and
cache load (per function and signature) and the report's plots. Wall seconds are the parent's
(process start to exit), CPU seconds the child's user + system time; ``interpreter_start_and_exit_s``
is the wall time outside the probe's own first and last lines (the interpreter's start, and its
exit: the teardown of every module, or none where the program skips it). The machine is shared:
the load average before each process is recorded, and every figure is given as min / median /
max over the rounds. Prints tables and writes bench/results/startup_cpu.json.

    python bench/bench_startup.py [--rounds 3] [--baseline TREE] [--result startup_cpu.json]
        [-- DEDUP ARGS...]

``--baseline TREE``: a checkout of another revision (its ``gpusimhash`` folder is put first on
``PYTHONPATH``); each round then runs every scenario on it too, in turns with this tree, and
its figures are stored beside this tree's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

PROBE = Path(__file__).resolve().parent / "_startup_probe.py"
PACKAGES = (
    "gpusimhash",
    "numpy",
    "numba",
    "llvmlite",
    "scipy",
    "faiss",
    "matplotlib",
    "PIL",
    "pyarrow",
    "tqdm",
)
FINGERPRINT_CODE = (
    "import gpusimhash; gpusimhash.fingerprint(['The cat sat on the mat.', "
    "'the cat sat on the mat', 'A dog ran in the park.'], bits=64)"
)


TREE: dict[str, str] = {}  # PYTHONPATH of the revision measured now ({} for this tree)


def run_process(command: list[str], cwd: Path, cache: Path) -> dict[str, Any]:
    """Run a command to its end: wall and CPU seconds, load average before, stderr."""
    # Matplotlib's font cache too: a first run on a new machine builds it
    matplotlib = str(cache / "matplotlib")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "MPLCONFIGDIR": matplotlib, **TREE}
    load = os.getloadavg()
    start = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, stderr = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise RuntimeError(f"{command} failed ({child.returncode}): {stderr[-2000:]}")
    return {"wall_s": wall, "load_average_before": load, "stderr": stderr}


def cpu_seconds() -> float:
    """User + system seconds of every child process reaped so far."""
    usage = os.times()
    return usage.children_user + usage.children_system


def measured(command: list[str], cwd: Path, cache: Path) -> dict[str, Any]:
    """`run_process` with the child's CPU seconds."""
    before = cpu_seconds()
    result = run_process(command, cwd, cache)
    result["cpu_s"] = cpu_seconds() - before
    return result


def probe(scenario: str, cache: Path, work: Path, arguments: list[str]) -> dict[str, Any]:
    """Run `_startup_probe.py` once in a new folder: the process's figures and the probe's."""
    folder = Path(tempfile.mkdtemp(dir=work))
    result_path = folder / "probe.json"
    command = [sys.executable, str(PROBE), scenario, str(result_path), *arguments]
    outcome = measured(command, folder, cache)
    outcome.pop("stderr")
    outcome.update(json.loads(result_path.read_text()))
    summary = folder / "gpusimhash-report" / "summary.json"
    if summary.exists():
        data = json.loads(summary.read_text())
        outcome["summary_timings_s"] = data["timings_s"]
        outcome["summary_results"] = {
            k: v for k, v in data["results"].items() if "second" in k or k == "documents"
        }
    return outcome


IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def import_seconds(stderr: str) -> dict[str, Any]:
    """Self seconds of ``-X importtime`` output summed by package, and the slowest modules."""
    by_package: dict[str, float] = defaultdict(float)
    modules = []
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if not match:
            continue
        self_us, cumulative_us, indent, name = match.groups()
        top = name.split(".")[0]
        by_package[top if top in PACKAGES else "other"] += int(self_us) / 1e6
        modules.append((name, int(self_us) / 1e6, int(cumulative_us) / 1e6, len(indent)))
    slowest = sorted(modules, key=lambda m: -m[1])[:15]
    return {
        "total_s": round(sum(by_package.values()), 4),
        "by_package_s": {k: round(v, 4) for k, v in sorted(by_package.items())},
        "slowest_modules_self_s": {name: round(s, 4) for name, s, _, _ in slowest},
        "imported": sorted({m[0].split(".")[0] for m in modules} & set(PACKAGES)),
    }


def importtime(code: list[str], cache: Path, work: Path) -> dict[str, Any]:
    """A warm process under ``python -X importtime``: its import seconds, wall and CPU."""
    folder = Path(tempfile.mkdtemp(dir=work))
    outcome = measured([sys.executable, "-X", "importtime", *code], folder, cache)
    outcome.update(import_seconds(outcome.pop("stderr")))
    return outcome


def one_round(work: Path, arguments: list[str]) -> dict[str, Any]:
    """Every scenario once, each cold one on a new empty cache."""
    dedup_cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
    fingerprint_cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
    return {
        "dedup cold": probe("dedup", dedup_cache, work, arguments),
        "dedup warm": probe("dedup", dedup_cache, work, arguments),
        "fingerprint cold": probe("fingerprint", fingerprint_cache, work, []),
        "fingerprint warm": probe("fingerprint", fingerprint_cache, work, []),
        "import fingerprint": importtime(["-c", FINGERPRINT_CODE], fingerprint_cache, work),
        "import dedup": importtime(["-m", "gpusimhash", "dedup", *arguments], dedup_cache, work),
    }


def spread(values: list[float]) -> dict[str, float]:
    """Min, median and max, rounded."""
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def shown(values: list[float]) -> str:
    """``min / median / max`` of seconds, as text."""
    s = spread(values)
    return f"{s['min']:.2f} / {s['median']:.2f} / {s['max']:.2f}"


def per_function(rounds: list[dict[str, Any]], scenario: str) -> list[dict[str, Any]]:
    """Each compiled function and signature: its source and exclusive seconds over the rounds."""
    seconds: dict[tuple[str, str, str, bool], list[float]] = defaultdict(list)
    for measured_round in rounds:
        for record in measured_round[scenario]["compiles"]:
            key = (record["function"], record["signature"], record["source"], record["parallel"])
            seconds[key].append(record["exclusive_seconds"])
    rows = [
        {
            "function": function.removeprefix("gpusimhash."),
            "signature": signature,
            "source": source,
            "parallel": parallel,
            "exclusive_s": spread(values),
        }
        for (function, signature, source, parallel), values in seconds.items()
    ]
    return sorted(rows, key=lambda row: -row["exclusive_s"]["median"])


def totals(rounds: list[dict[str, Any]], scenario: str) -> dict[str, Any]:
    """Wall, CPU, compile and cache-load seconds of a scenario over the rounds."""
    runs = [r[scenario] for r in rounds]

    def summed(run: dict[str, Any], source: str) -> float:
        return sum(c["exclusive_seconds"] for c in run.get("compiles", []) if c["source"] == source)

    result: dict[str, Any] = {
        "wall_s": spread([run["wall_s"] for run in runs]),
        "cpu_s": spread([run["cpu_s"] for run in runs]),
        "load_average_before": [run["load_average_before"] for run in runs],
    }
    if "compiles" in runs[0]:
        result["compile_s"] = spread([summed(run, "compiled") for run in runs])
        result["cache_load_s"] = spread([summed(run, "cache") for run in runs])
        result["specializations_compiled"] = spread(
            [sum(c["source"] == "compiled" for c in run["compiles"]) for run in runs]
        )
        result["scenario_cpu_s"] = spread([run["scenario_cpu_seconds"] for run in runs])
        result["outside_the_scenario_s"] = spread(
            [run["wall_s"] - run["scenario_seconds"] for run in runs]
        )
        # the interpreter's start before the probe's first line, and its exit after the last
        result["interpreter_start_and_exit_s"] = spread(
            [run["wall_s"] - run["since_probe_start_seconds"] for run in runs]
        )
    if "plots_seconds" in runs[0] and runs[0]["plots_seconds"]:
        result["plots_s"] = {
            name: spread([run["plots_seconds"].get(name, 0.0) for run in runs])
            for name in runs[0]["plots_seconds"]
        }
        result["plots_cpu_s"] = {
            name: spread([run["plots_cpu_seconds"].get(name, 0.0) for run in runs])
            for name in runs[0]["plots_cpu_seconds"]
        }
    if "summary_timings_s" in runs[0]:
        result["summary_timings_s"] = {
            name: spread([run["summary_timings_s"][name] for run in runs])
            for name in runs[0]["summary_timings_s"]
        }
        result["summary_documents_per_second"] = spread(
            [run["summary_results"]["documents_per_second"] for run in runs]
        )
    if "by_package_s" in runs[0]:
        names = sorted({name for run in runs for name in run["by_package_s"]})
        result["import_total_s"] = spread([run["total_s"] for run in runs])
        result["import_by_package_s"] = {
            name: spread([run["by_package_s"].get(name, 0.0) for run in runs]) for name in names
        }
        result["imported"] = runs[-1]["imported"]
        result["slowest_modules_self_s"] = runs[-1]["slowest_modules_self_s"]
    return result


def revision(tree: Path) -> str | None:
    """Return the commit a checkout is at, or None where it is no git checkout."""
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], check=False, capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--result", default="startup_cpu.json")
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision")
    parser.add_argument("dedup_args", nargs="*", help="after --: arguments of gpusimhash dedup")
    args = parser.parse_args()

    rounds, baseline_rounds = [], []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as work:
        for number in range(args.rounds):
            print(f"round {number + 1} of {args.rounds}, load {os.getloadavg()}", flush=True)
            TREE.clear()
            rounds.append(one_round(Path(work), args.dedup_args))
            if args.baseline is not None:
                TREE["PYTHONPATH"] = str(args.baseline.resolve())
                baseline_rounds.append(one_round(Path(work), args.dedup_args))
    scenarios = list(rounds[0])
    summary = {name: totals(rounds, name) for name in scenarios}
    baseline = None
    if baseline_rounds:
        baseline = {
            "tree": str(args.baseline),
            "revision": revision(args.baseline),
            "summary": {name: totals(baseline_rounds, name) for name in scenarios},
            "functions": {
                name: per_function(baseline_rounds, name)
                for name in ("dedup cold", "fingerprint cold")
            },
            "raw_rounds": baseline_rounds,
        }
        print("\nbaseline: wall and CPU seconds, min / median / max")
        print_table(
            [
                {
                    "scenario": name,
                    "wall": shown([r[name]["wall_s"] for r in baseline_rounds]),
                    "cpu": shown([r[name]["cpu_s"] for r in baseline_rounds]),
                }
                for name in scenarios
            ],
            ["scenario", "wall", "cpu"],
        )

    print("\nseconds, min / median / max over the rounds")
    rows = []
    for name in scenarios:
        row = {
            "scenario": name,
            "wall": shown([r[name]["wall_s"] for r in rounds]),
            "cpu": shown([r[name]["cpu_s"] for r in rounds]),
        }
        if "compiles" in rounds[0][name]:
            row["compile"] = "{min:.2f} / {median:.2f} / {max:.2f}".format(
                **summary[name]["compile_s"]
            )
            row["cache load"] = "{min:.2f} / {median:.2f} / {max:.2f}".format(
                **summary[name]["cache_load_s"]
            )
        if "import_total_s" in summary[name]:
            row["imports"] = "{min:.2f} / {median:.2f} / {max:.2f}".format(
                **summary[name]["import_total_s"]
            )
        rows.append(row)
    print_table(rows, ["scenario", "wall", "cpu", "compile", "cache load", "imports"])

    functions = {
        "dedup cold": per_function(rounds, "dedup cold"),
        "dedup warm": per_function(rounds, "dedup warm"),
        "fingerprint cold": per_function(rounds, "fingerprint cold"),
        "fingerprint warm": per_function(rounds, "fingerprint warm"),
    }
    print("\ndedup cold: compile seconds per function and signature (exclusive, median)")
    print_table(
        [
            {
                "function": row["function"],
                "parallel": row["parallel"],
                "seconds": row["exclusive_s"]["median"],
                "signature": row["signature"][:70],
            }
            for row in functions["dedup cold"]
        ],
        ["function", "parallel", "seconds", "signature"],
    )
    for name in ("import fingerprint", "import dedup"):
        print(f"\n{name}: import seconds by package (median)")
        print_table(
            [
                {"package": package, "seconds": values["median"]}
                for package, values in summary[name]["import_by_package_s"].items()
            ],
            ["package", "seconds"],
        )
    if "plots_s" in summary["dedup warm"]:
        print("\ndedup warm: report plots (median seconds)")
        print_table(
            [
                {
                    "plot": k,
                    "seconds": v["median"],
                    "cpu": summary["dedup warm"]["plots_cpu_s"][k]["median"],
                }
                for k, v in summary["dedup warm"]["plots_s"].items()
            ],
            ["plot", "seconds", "cpu"],
        )
    target = write_json(
        args.result,
        {
            "shared_machine": "2 cores shared with other sessions: see the load averages",
            "rounds": args.rounds,
            "summary": summary,
            "functions": functions,
            "raw_rounds": rounds,
            "baseline": baseline,
        },
    )
    print(f"\nwrote {target}")


if __name__ == "__main__":
    main()
