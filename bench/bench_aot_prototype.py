"""What an ahead-of-time compiled core would cost and gain, on one loop: the fingerprint's.

A C translation of ``_cpu._loops.accumulate_codes`` (xorshift32 sign words, int64 slot sums,
packed LSB first) is built with the system C compiler into a shared library, loaded with
ctypes in a fresh process (no Numba import) and checked bit for bit against the Numba loop.
Measured: the build's seconds (what a package build would add per loop of this size), a fresh
process's seconds to load the library and fingerprint a few documents, the same with the Numba
loop on an empty and on a warm cache, and both loops' speed on 100,000 documents. Prints a
table and writes bench/results/aot_prototype.json.

    python bench/bench_aot_prototype.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json

C_SOURCE = r"""
#include <stdint.h>
#include <string.h>

void accumulate_codes(const uint32_t *hashes, const int64_t *offsets, const int64_t *weights,
                      int64_t n_docs, int64_t bits, uint8_t *codes, int64_t *slots) {
    int64_t n_words = (bits + 31) / 32;
    for (int64_t doc = 0; doc < n_docs; doc++) {
        memset(slots, 0, sizeof(int64_t) * bits);
        for (int64_t entry = offsets[doc]; entry < offsets[doc + 1]; entry++) {
            int64_t weight = weights[entry];
            uint64_t state = hashes[entry];
            if (state == 0) state = 1;
            for (int64_t word = 0; word < n_words; word++) {
                state ^= (state << 13) & 0xFFFFFFFFu;
                state ^= state >> 17;
                state ^= (state << 5) & 0xFFFFFFFFu;
                int64_t base = 32 * word, top = bits - base < 32 ? bits - base : 32;
                for (int64_t bit = 0; bit < top; bit++) {
                    int64_t sign = (int64_t)((state >> bit) & 1) * 2 - 1;
                    slots[base + bit] += sign * weight;
                }
            }
        }
        uint8_t *code = codes + doc * (bits / 8);
        memset(code, 0, bits / 8);
        for (int64_t bit = 0; bit < bits; bit++)
            if (slots[bit] > 0) code[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    }
}
"""

LOADER = r"""
import ctypes, sys, time
import numpy as np
library = ctypes.CDLL(sys.argv[1])
def accumulate(hashes, offsets, weights, bits):
    n = offsets.size - 1
    codes = np.zeros((n, bits // 8), np.uint8)
    slots = np.empty(bits, np.int64)
    p = lambda a: a.ctypes.data_as(ctypes.c_void_p)
    library.accumulate_codes(p(hashes), p(offsets), p(weights), ctypes.c_int64(n),
                             ctypes.c_int64(bits), p(codes), p(slots))
    return codes
"""

DATA = r"""
rng = np.random.default_rng(0)
n = int(sys.argv[2])
sizes = rng.integers(1, 40, n)
offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
hashes = rng.integers(0, 2**32, int(offsets[-1]), dtype=np.uint64).astype(np.uint32)
weights = rng.integers(-1000, 1000, hashes.size, dtype=np.int64)
"""

FRESH_C = LOADER + DATA + "accumulate(hashes, offsets, weights, 256)\n"
FRESH_NUMBA = (
    "import sys\nimport numpy as np\n"
    + DATA
    + "from gpusimhash._cpu._loops import accumulate_codes\n"
    + "accumulate_codes(hashes, offsets, weights, 256)\n"
)
SPEED = (
    LOADER
    + DATA
    + r"""
from gpusimhash._cpu._loops import accumulate_codes
want = accumulate_codes(hashes, offsets, weights, 256)
got = accumulate(hashes, offsets, weights, 256)
assert np.array_equal(want, got), "C and Numba differ"
from gpusimhash._cpu._runtime import serial_twin
serial = serial_twin(accumulate_codes)
serial(hashes, offsets, weights, 256)
def best(f):
    times = []
    for _ in range(5):
        t = time.perf_counter(); f(hashes, offsets, weights, 256); times.append(time.perf_counter() - t)
    return min(times)
print(best(accumulate), best(serial), best(accumulate_codes))
"""
)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler")
    rows: dict[str, list[float]] = {
        "build (cc -O3 -shared)": [],
        "fresh process, C library, 3 docs": [],
        "fresh process, Numba, empty cache, 3 docs": [],
        "fresh process, Numba, warm cache, 3 docs": [],
    }
    speed = []
    loads = []
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "core.c"
        source.write_text(C_SOURCE)
        library = Path(work) / "core.so"
        for _ in range(args.rounds):
            loads.append(os.getloadavg())
            start = time.perf_counter()
            subprocess.run(
                [compiler, "-O3", "-shared", "-fPIC", str(source), "-o", str(library)], check=True
            )
            rows["build (cc -O3 -shared)"].append(time.perf_counter() - start)
            env = dict(os.environ)
            rows["fresh process, C library, 3 docs"].append(
                timed([sys.executable, "-c", FRESH_C, str(library), "3"], env)[0]
            )
            cache = tempfile.mkdtemp(dir=work)
            env["NUMBA_CACHE_DIR"] = cache
            rows["fresh process, Numba, empty cache, 3 docs"].append(
                timed([sys.executable, "-c", FRESH_NUMBA, "", "3"], env)[0]
            )
            rows["fresh process, Numba, warm cache, 3 docs"].append(
                timed([sys.executable, "-c", FRESH_NUMBA, "", "3"], env)[0]
            )
            _, out = timed([sys.executable, "-c", SPEED, str(library), "100000"], env)
            speed.append([float(x) for x in out.split()])
    table = [
        {
            "measure": name,
            "min": f"{min(v):.3f}",
            "median": f"{statistics.median(v):.3f}",
            "max": f"{max(v):.3f}",
        }
        for name, v in rows.items()
    ]
    for k, name in enumerate(["C, one thread", "Numba serial twin", "Numba parallel (2 cores)"]):
        values = [s[k] for s in speed]
        table.append(
            {
                "measure": f"100,000 docs, 256 bits: {name}",
                "min": f"{min(values):.3f}",
                "median": f"{statistics.median(values):.3f}",
                "max": f"{max(values):.3f}",
            }
        )
    print("seconds over the rounds (bits equal: checked)")
    print_table(table, ["measure", "min", "median", "max"])
    target = write_json(
        "aot_prototype.json",
        {
            "shared_machine": "2 cores shared with other sessions: see the load averages",
            "compiler": compiler,
            "rounds": args.rounds,
            "load_average_before_rounds": loads,
            "seconds": {row["measure"]: json.loads(json.dumps(row)) for row in table},
        },
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
