"""What the GPU parity probe (gpusimhash._gpu.probe) costs, family by family.

The probe runs on the first GPU use of each kernel family in a process. Its cost splits into
the host part (making the inputs and the CPU's answers) and the device part (the same inputs
through the GPU path). Here the device part runs on the emulated kernels (tests/gpu/cuda_emu,
compiled by g++ and run block by block on the CPU), so only the host part is a figure for a
real machine; bench/device_check measures both on a GPU with `timed`.

Each family is timed ``--passes`` times in one process: the first pass includes loading (or
compiling) the Numba loops of the CPU answers; the best of the others is what a process with
warm caches pays on an idle machine (the load average is recorded: other jobs share it).

    python bench/bench_gpu_probe.py   ->   bench/results/gpu_probe_emulated.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "gpu")]

from gpusimhash import _compile_time
from gpusimhash._gpu import probe, probe_cases


def timed(
    device: probe_cases.Device, families: tuple[str, ...] = probe.FAMILIES, passes: int = 2
) -> list[dict[str, Any]]:
    """Seconds of each family's host part (inputs, CPU answers), GPU calls and comparisons.

    A GPU call that raises is recorded under ``failures`` and ends its family's pass.
    """
    rows = []
    for number in range(1, passes + 1):
        for family in families:
            compile_before = _compile_time.seconds()
            host = gpu = compare = 0.0
            failures = []
            cases = probe_cases.CASES[family](device, np.random.default_rng(probe_cases.SEED))
            mark = time.perf_counter()
            for case in cases:
                started = time.perf_counter()
                host += started - mark
                try:
                    got = case.run()
                except Exception as error:  # noqa: BLE001 - what the probe would report
                    failures.append(f"{case.label}: {type(error).__name__}: {error}")
                    mark = time.perf_counter()
                    break
                ran = time.perf_counter()
                problem = case.compare(got, case.expected)
                mark = time.perf_counter()
                gpu += ran - started
                compare += mark - ran
                if problem is not None:
                    failures.append(f"{case.label}: {problem}")
            host += time.perf_counter() - mark
            rows.append(
                {
                    "pass": number,
                    "family": family,
                    "host_s": round(host, 4),
                    "gpu_s": round(gpu, 4),
                    "compare_s": round(compare, 4),
                    "total_s": round(host + gpu + compare, 4),
                    "numba_compile_s": round(_compile_time.seconds() - compile_before, 4),
                    "failures": failures,
                }
            )
    return rows


def main() -> None:
    from _common import print_table, write_json
    from cuda_emu import emulator

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--result", default="gpu_probe_emulated.json")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        library = emulator.build(Path(folder))
        build_s = time.perf_counter() - start
        launcher = emulator.EmulatedLauncher(library, threads_per_block=32, max_blocks=3)
        rows = timed(emulator.probe_device(launcher), passes=args.passes)
    columns = ["pass", "family", "host_s", "gpu_s", "compare_s", "total_s", "numba_compile_s"]
    print_table(rows, columns)
    summary = []
    for family in probe.FAMILIES:
        mine = [r for r in rows if r["family"] == family]
        summary.append(
            {
                "family": family,
                "first_pass_host_s": mine[0]["host_s"],
                "warm_host_s": min(r["host_s"] for r in mine[1:]),
                "warm_emulated_gpu_s": min(r["gpu_s"] for r in mine[1:]),
            }
        )
    summary.append(
        {
            "family": "all",
            **{k: round(sum(s[k] for s in summary), 4) for k in summary[0] if k != "family"},
        }
    )
    print()
    print_table(summary, list(summary[0]))
    path = write_json(
        args.result,
        {
            "what": "GPU parity probe cost; gpu_s is the emulated kernels on the CPU, not a GPU",
            "emulator_build_s": round(build_s, 2),
            "passes": args.passes,
            "rows": rows,
            "summary": summary,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
