"""A first run compiles nothing on the main job's path, and little where Numba remains.

The default dedup (the feature join, stars), fingerprinting and the report run compiled C loops
built with the package: a fresh process never imports Numba for them. The codes' multi-index
hashing join is still Numba, compiled on first use and cached: its loops must not hold Numba's
costliest library code, ``np.argsort``'s generic quicksort or mergesort (about a second per key
type) or the code that formats a shape-mismatch error of a slice assignment (unicode
concatenation, ``repr``, ``str``: about 1.6 s). On an empty cache (a child process, its own
``NUMBA_CACHE_DIR``), their LLVM code is read before any cache could hide it.
"""

import json
import os
import subprocess
import sys

import pytest

# what the costly library code leaves in a loop's LLVM code
COSTLY = ("quicksort", "mergesort", "raise_with_shape_context", "unicode")

CORPUS = r"""
import json, sys
out = sys.argv[1]
with open(out + ".jsonl", "w") as stream:
    for k in range(400):
        text = f"the quick brown fox {k % 37} jumps over the lazy dog {k % 11} again"
        stream.write(json.dumps({"text": text}) + "\n")
"""

DEFAULT_JOB = (
    CORPUS
    + r"""
from gpusimhash.dedup.pipeline import dedup_file
dedup_file(out + ".jsonl", out, report=True)  # the defaults: the feature join, stars
dedup_file(out + ".jsonl", out + "-jaccard", report=True, min_jaccard=0.8)
print(json.dumps({"numba": "numba" in sys.modules}))
"""
)

CODES_JOB = (
    CORPUS
    + r"""
from numba.core.registry import CPUDispatcher
from gpusimhash.dedup.pipeline import dedup_file
from gpusimhash.join import _mih
_mih._BRUTE_ALWAYS, _mih._BRUTE_COST = 0, 1.0  # the multi-index hashing join, not brute force
dedup_file(out + ".jsonl", out + "-codes", candidates="codes", bits=64, max_distance=3)
from gpusimhash._cpu import _mih_loops
found = {}
compiled = 0
for name, loop in vars(_mih_loops).items():
    if isinstance(loop, CPUDispatcher):
        for text in loop.inspect_llvm().values():
            compiled += 1
            found[name] = sorted({c for c in sys.argv[2:] if c in text} | set(found.get(name, [])))
print(json.dumps({"compiled": compiled, "costly": {k: v for k, v in found.items() if v}}))
"""
)


def run(code, tmp_path, *args):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "run"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_the_default_job_never_imports_numba(tmp_path):
    assert run(DEFAULT_JOB, tmp_path) == {"numba": False}
    assert not (tmp_path / "cache").exists()  # nothing compiled, nothing cached


@pytest.mark.slow
def test_no_compiled_loop_of_the_codes_join_holds_numbas_costly_library_code(tmp_path):
    result = run(CODES_JOB, tmp_path, *COSTLY)
    assert result["compiled"] >= 3  # the run compiled its loops here, not from a cache
    assert result["costly"] == {}
