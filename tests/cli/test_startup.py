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


def test_fingerprinting_texts_imports_no_scipy_sparse_faiss_or_matplotlib():
    # (Numba's own start-up imports scipy.linalg when SciPy is installed)
    code = (
        "import sys, gpusimhash\n"
        "gpusimhash.fingerprint(['a b', 'b c'], bits=64)\n"
        "print(sorted(m for m in ('scipy.sparse', 'faiss', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_planning_a_threshold_imports_no_scipy_stats():
    code = (
        "import sys\n"
        "from gpusimhash.verify._threshold import candidate_radius\n"
        "candidate_radius(256, min_cosine=0.8)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
