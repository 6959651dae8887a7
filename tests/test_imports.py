"""Every module of the package imports on its own, in an interpreter that has none of it yet.

The suite imports modules in one order, which can hide an import cycle that a user's first
``import gpusimhash.<module>`` meets. Each module is imported in a child forked from an
interpreter that has loaded the third-party libraries (to keep the test fast) but no module of
gpusimhash.
"""

import pkgutil
import subprocess
import sys

import gpusimhash

MODULES = sorted(
    module.name
    for module in pkgutil.walk_packages(gpusimhash.__path__, prefix="gpusimhash.")
    if not module.name.endswith("__main__")
)

IMPORT_EACH = """
import importlib, os, sys, traceback
import numpy, scipy.sparse, scipy.stats, numba, faiss, tqdm  # third-party only
assert not any(name.startswith("gpusimhash") for name in sys.modules)
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append(name)
print("FAILED", " ".join(failed))
"""


def test_every_module_imports_in_a_fresh_interpreter():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH, "gpusimhash", *MODULES],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert done.stdout.strip() == "FAILED", done.stdout + done.stderr


def test_the_check_sees_a_cycle(tmp_path):
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("from cyclic.a import A\n")
    (package / "a.py").write_text("from cyclic.b import B\nA = 1\n")
    (package / "b.py").write_text("from cyclic.a import A\nB = 2\n")
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH.replace("gpusimhash", "cyclic"), "cyclic.b"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=True,
    )
    assert done.stdout.strip() == "FAILED cyclic.b"
