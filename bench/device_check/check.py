"""Device check: one command, groups of sections in order of value, each under a time cap.

``run.sh`` calls this once; it runs each group of ``groups.py`` in its own process, in this
order, each capped (seconds), the caps and the time left for the tests summing to ``TOTAL_S``:

=================  ====  ============================================================
environment          60  carry, imports, GPU, Numba layer; CPU loops compiled (parallel)
parity               90  the parity probe's cost; 100k-document fingerprint parity
                         (str, UTF-8, batches) and verification parity, bit for bit
join_medium_knn      70  1M joins (128/r18, 64/r3) against the CPU join; kNN of 10k
                         queries against 10M codes checked with FAISS
benchmarks           60  copy bandwidth, accumulation, device text, end to end, verify
join_big             45  10M joins, kNN at 128 bits
cpu_baselines        60  the CPU sides of the benchmarks (spawned workers), the ratios
pytest             rest  the gpu-marked tests, with the time left
=================  ====  ============================================================

The JSON (``device_check.json`` in ``--out``) is rewritten before and after every section: a
group killed at its cap keeps its finished sections, and the section it was in is recorded
as an error. The log's first line is the environment's summary: a missing carry or a failed
import is named there, and every section that does not need it still runs.

``--dry-run`` runs the whole check on a machine without a GPU, at small sizes: every CPU part
for real (the CPU baselines with their workers, the CPU joins, the comparisons against the
CPU stand-in, the JSON, the tests' collection), every GPU part recorded as skipped.

This process imports nothing beyond the standard library, so that a broken installation
still gets a JSON and a log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# (group, cap in seconds; None: the time left); the caps and the rest sum to TOTAL_S
GROUPS = (
    ("environment", 60),
    ("parity", 90),
    ("join_medium_knn", 70),
    ("benchmarks", 60),
    ("join_big", 45),
    ("cpu_baselines", 60),
    ("pytest", None),
)
TOTAL_S = 460  # run.sh: pip 15 s, this process killed at 465 s: 480 s in all
PYTEST_MAX_S = 200
JSON_NAME = "device_check.json"


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _save(path: Path, result: dict) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(result, indent=2, default=str) + "\n")
    os.replace(temporary, path)


def _run_group(name: str, cap: float, args: argparse.Namespace, capture: bool) -> dict:
    """Run one group in its own process (and process group) under ``cap`` seconds."""
    command = [sys.executable, str(HERE / "check.py"), "--group", name, "--cap", str(cap)]
    command += ["--out", str(args.out), "--corpus", str(args.corpus)]
    command += ["--dry-run"] * args.dry_run
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
        text=True,
    )
    status: dict = {"cap_s": cap}
    try:
        output, _ = process.communicate(timeout=cap)
        status["exit_code"] = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its workers and tests too
        output, _ = process.communicate()
        status["exit_code"] = f"killed at its cap of {cap:.0f} s"
    status["seconds"] = round(time.perf_counter() - start, 2)
    status["output"] = output
    return status


def _record_group(path: Path, name: str, status: dict) -> dict:
    """Store a group's status; a section it was killed in becomes an error."""
    result = _load(path)
    running = result.pop("running", None)
    if running is not None:
        result.setdefault("errors", {})[running] = {
            "error": f"group {name} stopped ({status['exit_code']}) during this section"
        }
    status = {k: v for k, v in status.items() if k != "output"}
    result.setdefault("groups", {})[name] = status
    _save(path, result)
    return result


def orchestrate(args: argparse.Namespace) -> int:
    """Run every group in order under its cap; print the summary; the exit code."""
    path = args.out / JSON_NAME
    args.out.mkdir(parents=True, exist_ok=True)
    _save(
        path,
        {
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "dry_run": args.dry_run,
            "caps_s": dict(GROUPS),
            "total_s": TOTAL_S,
            "errors": {},
            "skipped": {},
            "section_seconds": {},
            "section_order": [],
        },
    )
    start = time.perf_counter()
    result: dict = {}
    for name, cap in GROUPS:
        left = TOTAL_S - (time.perf_counter() - start)
        limit = min(cap if cap is not None else PYTEST_MAX_S, left)
        if limit < 5:
            print(f"--- group {name}: skipped, {left:.0f} s left", flush=True)
            result = _record_group(path, name, {"exit_code": "skipped: no time left"})
            continue
        if name != "environment":
            print(f"--- group {name} (cap {limit:.0f} s)", flush=True)
        status = _run_group(name, limit, args, capture=name == "environment")
        result = _record_group(path, name, status)
        if name == "environment":  # its summary is the log's first line, its output after
            print(result.get("environment_summary", "environment: the probe wrote nothing"))
            print(status["output"], end="", flush=True)
    if not args.dry_run:
        import environment

        result["nvidia_smi_end"] = environment.nvidia_smi()
        _save(path, result)
    print(f"\n{'section':40s} {'seconds':>8s}  state")
    for section in result.get("section_order", []):
        state = "skipped" if section in result["skipped"] else "ok"
        state = (
            "ERROR " + result["errors"][section]["error"] if section in result["errors"] else state
        )
        print(f"{section:40s} {result['section_seconds'].get(section, 0):8.1f}  {state[:100]}")
    for section, error in result.get("errors", {}).items():
        if section not in result.get("section_order", []):
            print(f"{section:40s} {'':8s}  ERROR {error['error'][:100]}")
    failed = {n: g["exit_code"] for n, g in result.get("groups", {}).items() if g["exit_code"] != 0}
    print(
        f"groups not finished cleanly: {failed or 'none'}; total {time.perf_counter() - start:.0f} s"
    )
    return 1 if result.get("errors") or failed else 0


def group_main(args: argparse.Namespace) -> int:
    """Run one group's sections (a child of ``orchestrate``)."""
    sys.path[:0] = [str(HERE), str(ROOT)]
    import groups
    from report import Report

    report = Report(args.out / JSON_NAME)
    run = groups.Run(
        sizes=groups.DRY_RUN if args.dry_run else groups.Sizes(),
        corpus=args.corpus,
        out=args.out,
        dry_run=args.dry_run,
        workers=2 if args.dry_run else groups.cpu_count(),
    )
    report.result.setdefault("settings", run.settings())
    if args.group == "pytest":
        groups.pytest_gpu(run, report, args.cap)
    else:
        groups.GROUPS[args.group](run, report)
    if args.group == "environment" and isinstance(report.result.get("environment"), dict):
        import environment

        report.result["environment_summary"] = environment.summary(report.result["environment"])
        report.write()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON and logs")
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus" / "pypi_summaries.txt.gz")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: small sizes")
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--cap", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.exit(group_main(args) if args.group else orchestrate(args))


if __name__ == "__main__":
    main()
