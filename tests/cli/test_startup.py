"""The command line starts without importing the numerical stack."""

import subprocess
import sys

HEAVY = ("numpy", "scipy", "numba", "faiss", "matplotlib", "tqdm")


def test_help_and_version_import_nothing_heavy():
    code = (
        "import sys\n"
        "from gpusimhash.cli import build_parser\n"
        "build_parser().format_help()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_public_names_load_on_first_use():
    code = (
        "import sys, gpusimhash\n"
        "before = 'numpy' in sys.modules\n"
        "gpusimhash.hamming\n"
        "print(before, 'gpusimhash.codes' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
