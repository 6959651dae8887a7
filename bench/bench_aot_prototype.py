"""What an ahead-of-time compiled core would cost and gain, on one loop: the fingerprint's.

The loop ``_cpu._loops.accumulate_codes`` (xorshift32 sign words, int64 slot sums, packed LSB
first) in five forms, each checked bit for bit against Numba's serial form:

- Numba, compiled on first use (today's core), on an empty and on a warm cache;
- ``numba.pycc`` (Numba's ahead-of-time compiler, pending deprecation since Numba 0.57): the
  same Python source compiled into an extension module, for the generic x86-64 CPU (what a
  wheel could ship) and for this machine's CPU (``target_cpu="host"``);
- a C translation built with the system compiler, ``-O3`` (portable) and ``-O3
  -march=native``, loaded with ctypes (which lets go of the GIL during the call).

For each: the build's seconds, a fresh process's seconds to import it and fingerprint 3
documents (and whether Numba was imported), one call's seconds on 100,000 documents, and two
calls in two threads against one call (1.0: the threads run at once; 2.0: one waits for the
other, the GIL held). Prints a table and writes bench/results/aot_prototype.json.

    python bench/bench_aot_prototype.py [--rounds 3]
"""

from __future__ import annotations

import argparse
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

DATA = r"""
rng = np.random.default_rng(0)
n = int(sys.argv[2])
sizes = rng.integers(1, 40, n)
offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
hashes = rng.integers(0, 2**32, int(offsets[-1]), dtype=np.uint64).astype(np.uint32)
weights = rng.integers(-1000, 1000, hashes.size, dtype=np.int64)
"""

C_LOADER = r"""
import ctypes
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

PYCC_LOADER = r"""
import importlib.util
spec = importlib.util.spec_from_file_location("aotcore", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
accumulate = module.accumulate_codes
"""

NUMBA_LOADER = r"""
from gpusimhash._cpu._loops import accumulate_codes
from gpusimhash._cpu._runtime import serial_twin
accumulate = serial_twin(accumulate_codes)
"""

PYCC_BUILD = r"""
import sys
from numba.pycc import CC
from gpusimhash._cpu._loops import accumulate_codes
from gpusimhash._cpu._runtime import serial_twin
cc = CC("aotcore")
cc.output_dir = sys.argv[1]
cc.target_cpu = sys.argv[2]
cc.verbose = False
cc.export("accumulate_codes", "u1[:,:](u4[:], i8[:], i8[:], i8)")(
    serial_twin(accumulate_codes).py_func
)
cc.compile()
"""

FRESH = "accumulate(hashes, offsets, weights, 256)\nprint('numba' in sys.modules)\n"

SPEED = r"""
import threading
from gpusimhash._cpu._loops import accumulate_codes
from gpusimhash._cpu._runtime import serial_twin
want = serial_twin(accumulate_codes)(hashes, offsets, weights, 256)
assert np.array_equal(want, accumulate(hashes, offsets, weights, 256)), "bits differ"
def call():
    accumulate(hashes, offsets, weights, 256)
def two_threads():
    workers = [threading.Thread(target=call) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
def best(f):
    times = []
    for _ in range(5):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times)
one = best(call)
print(one, best(two_threads) / one)
"""

HEADER = "import sys, time\nimport numpy as np\n"


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run a command; return its wall seconds and standard output."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, done.stdout


def build_forms(
    work: Path, compiler: str, env: dict[str, str]
) -> dict[str, tuple[float, str, str]]:
    """Build every ahead-of-time form; return name: (build seconds, artefact, loader)."""
    source = work / "core.c"
    source.write_text(C_SOURCE)
    forms: dict[str, tuple[float, str, str]] = {}
    for name, flags in (("C -O3", ["-O3"]), ("C -O3 -march=native", ["-O3", "-march=native"])):
        library = work / f"core{len(forms)}.so"
        seconds, _ = timed(
            [compiler, *flags, "-shared", "-fPIC", str(source), "-o", str(library)], env
        )
        forms[name] = (seconds, str(library), C_LOADER)
    for name, cpu in (("pycc, generic x86-64", "generic"), ("pycc, this CPU", "host")):
        folder = work / f"pycc-{cpu}"
        folder.mkdir()
        seconds, _ = timed([sys.executable, "-c", PYCC_BUILD, str(folder), cpu], env)
        forms[name] = (seconds, str(next(folder.glob("aotcore*.so"))), PYCC_LOADER)
    return forms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("no C compiler")
    measures: dict[str, dict[str, list[float]]] = {}
    numba_imported: dict[str, bool] = {}
    loads = []

    def record(form: str, measure: str, value: float) -> None:
        measures.setdefault(form, {}).setdefault(measure, []).append(value)

    with tempfile.TemporaryDirectory() as work:
        for round_number in range(args.rounds):
            loads.append(os.getloadavg())
            env = dict(os.environ)
            env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=work)  # empty: the first run compiles
            folder = Path(tempfile.mkdtemp(dir=work))
            forms = {
                "Numba, empty cache": (0.0, "", NUMBA_LOADER),
                "Numba, warm cache": (0.0, "", NUMBA_LOADER),
                **build_forms(folder, compiler, env),
            }
            for form, (build_s, artefact, loader) in forms.items():
                if build_s:
                    record(form, "build_s", build_s)
                seconds, out = timed(
                    [sys.executable, "-c", HEADER + loader + DATA + FRESH, artefact, "3"], env
                )
                record(form, "fresh_process_3_docs_s", seconds)
                numba_imported[form] = out.strip() == "True"
            for form, (_, artefact, loader) in forms.items():
                if form == "Numba, empty cache":
                    continue
                _, out = timed(
                    [sys.executable, "-c", HEADER + loader + DATA + SPEED, artefact, "100000"],
                    env,
                )
                one, threads = (float(x) for x in out.split())
                record(form, "call_100000_docs_s", one)
                record(form, "two_threads_over_one_call", threads)
            print(f"round {round_number + 1} of {args.rounds} done")
    columns = [
        "build_s",
        "fresh_process_3_docs_s",
        "call_100000_docs_s",
        "two_threads_over_one_call",
    ]
    table = []
    for form, values in measures.items():
        row = {"form": form, "numba_imported": numba_imported[form]}
        for column in columns:
            if column in values:
                row[column] = f"{statistics.median(values[column]):.3f}"
        table.append(row)
    print("medians over the rounds (bits equal to Numba's: checked)")
    print_table(table, ["form", "numba_imported", *columns])
    target = write_json(
        "aot_prototype.json",
        {
            "shared_machine": "2 cores shared with other sessions: see the load averages",
            "compiler": compiler,
            "rounds": args.rounds,
            "load_average_before_rounds": loads,
            "loop": "_cpu._loops.accumulate_codes, serial, 256 bits",
            "medians": table,
            "every_round": measures,
        },
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
