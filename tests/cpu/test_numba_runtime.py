"""The compiled loops from several threads at once, and Numba's without a writable cache folder."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import gpusimhash

PACKAGE = Path(gpusimhash.__file__).parent

CONCURRENT = """
import threading
import numpy as np
import gpusimhash
texts = [f"document {i} about {i * 7919 % 1000} things" for i in range(3000)]
want = gpusimhash.fingerprint(texts, bits=128, device="cpu")
same = []
def work():
    for _ in range(4):
        same.append(np.array_equal(gpusimhash.fingerprint(texts, bits=128, device="cpu"), want))
threads = [threading.Thread(target=work) for _ in range(6)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(same), all(same))
"""


def run(code, env, cwd=None):
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_concurrent_fingerprints_give_the_same_codes():
    done = run(CONCURRENT, dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["24", "True"]


def test_numba_loops_compile_without_a_writable_cache_folder(tmp_path):
    # a copy of the package whose __pycache__ cannot be created, and a HOME that is a file
    copy = tmp_path / "site"
    shutil.copytree(PACKAGE, copy / "gpusimhash", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "gpusimhash" / "_cpu" / "__pycache__").write_text("not a folder")
    home = tmp_path / "home-is-a-file"
    home.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    code = (
        "import gpusimhash, numba, numpy as np; "
        "from gpusimhash._cpu import _mih_loops; "
        f"print(gpusimhash.__file__.startswith({str(copy)!r}), "
        "_mih_loops.block_keys(np.arange(8, dtype=np.uint64).reshape(4, 2), 0, 8)[1], "
        "numba.config.CACHE_DIR.rsplit('/', 1)[-1][:16])"
    )
    done = run(code, env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    flag, _, folder = done.stdout.split()
    assert (flag, folder) == ("True", "gpusimhash-numba")
