"""Helpers shared by the bench scripts: corpus loading, machine description, JSON output."""

from __future__ import annotations

import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from gpusimhash.io import writers

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "pypi_summaries.txt.gz"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def load_lines(path: Path, limit: int | None = None) -> list[str]:
    """Read one document per line from a text file, gzip-compressed or not."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[:limit] if limit else lines


# runs the command line in a fresh process, after ``setup`` (Python statements), and prints its
# peak resident memory (KiB) on stderr, last line. The peak is VmHWM, this process's own:
# ru_maxrss keeps the parent's from before the exec.
_COMMAND_LINE = (
    "import json, sys\n"
    "{setup}\n"
    "from gpusimhash.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
    "print(json.dumps({{'peak_kib': int(status.split()[0])}}), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def run_command_line(arguments: list[str], setup: str = "") -> tuple[float, int, str]:
    """Run ``gpusimhash`` in a fresh process: its wall seconds, peak resident KiB and stdout.

    ``setup`` runs first in that process (to change a setting before the command starts).
    """
    command = [sys.executable, "-c", _COMMAND_LINE.format(setup=setup), *arguments]
    begin = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - begin
    if done.returncode:
        raise RuntimeError(f"gpusimhash {' '.join(arguments)} failed: {done.stderr.strip()}")
    peak = json.loads(done.stderr.strip().splitlines()[-1])["peak_kib"]
    return seconds, int(peak), done.stdout


def best_of(repeats: int, run) -> tuple[float, object]:
    """Smallest wall time of ``repeats`` calls of ``run()``, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def machine() -> dict:
    """Describe the machine and the versions a result was measured with."""
    import faiss
    import numba
    import numpy
    import scipy

    import gpusimhash

    cpu = "unknown"
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "faiss": faiss.__version__,
        "faiss_threads": faiss.omp_get_max_threads(),
        "gpusimhash": gpusimhash.__version__,
        "load_average": os.getloadavg(),
    }


def write_json(name: str, payload: dict) -> Path:
    """Write a result file atomically under bench/results/, with the command and the machine."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    record = {
        **payload,
        "command": " ".join(["python", str(shown), *sys.argv[1:]]),
        "machine": machine(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / name
    writers.write_json(target, record)
    return target


def peer_path(package: str, peers_dir: Path) -> Path | None:
    """Install a peer package into its own folder (peers clash on the name ``simhash``).

    Returns the folder to put on PYTHONPATH, or None when pip cannot install it.
    """
    target = peers_dir / package
    if not target.exists():
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), package],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(f"could not install {package}: {done.stderr.strip()[-300:]}", file=sys.stderr)
            return None
    return target


def print_table(rows: list[dict], columns: list[str]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
