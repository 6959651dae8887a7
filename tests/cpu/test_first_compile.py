"""A first run compiles only the loops themselves, not Numba's costliest library code.

Numba compiles what a loop uses: ``np.argsort`` brings its generic quicksort or mergesort (about
a second per key type), and assigning an array into a slice brings the code that formats a
shape-mismatch error (unicode concatenation, ``repr``, ``str``: about 1.6 s). On an empty cache
(a child process, its own ``NUMBA_CACHE_DIR``), the compiled loops of a whole dedup run, report
included, hold neither; their LLVM code is read before any cache could hide it.
"""

import json
import os
import subprocess
import sys

import pytest

# what the costly library code leaves in a loop's LLVM code
COSTLY = ("quicksort", "mergesort", "raise_with_shape_context", "unicode")

RUN_AND_INSPECT = r"""
import importlib, json, sys
from numba.core.registry import CPUDispatcher
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash._cpu import _runtime

out = sys.argv[1]
with open(out + ".jsonl", "w") as stream:
    for k in range(400):
        text = f"the quick brown fox {k % 37} jumps over the lazy dog {k % 11} again"
        stream.write(json.dumps({"text": text}) + "\n")
dedup_file(out + ".jsonl", out, report=True)  # the defaults: the feature join, stars
dedup_file(out + ".jsonl", out + "-codes", candidates="codes", report=True)
from gpusimhash.verify import _product_join
_product_join.PRODUCT_MAX_WORK = -1  # the feature join's compiled index, not the product
dedup_file(out + ".jsonl", out + "-index", report=True)
names = ["_loops", "_cluster_loops", "_mih_loops", "_utf8_loops", "_sorting",
         "_allpairs_loops", "_verify_loops"]
loops = [(f"{n}.{k}", v) for n in names
         for k, v in vars(importlib.import_module("gpusimhash._cpu." + n)).items()
         if isinstance(v, CPUDispatcher)]
loops += [(twin.py_func.__qualname__, twin) for twin in _runtime._TWINS.values()]
found = {}
compiled = 0
for name, loop in loops:
    for text in loop.inspect_llvm().values():
        compiled += 1
        found[name] = sorted({c for c in sys.argv[2:] if c in text} | set(found.get(name, [])))
print(json.dumps({"compiled": compiled, "costly": {k: v for k, v in found.items() if v}}))
"""


@pytest.mark.slow
def test_no_compiled_loop_of_a_dedup_run_holds_numbas_costly_library_code(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_INSPECT, str(tmp_path / "run"), *COSTLY],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["compiled"] >= 20  # the run compiled its loops here, not from a cache
    assert result["costly"] == {}
