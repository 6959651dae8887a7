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


def run_python(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_the_command_exits_with_its_code_after_the_exit_handlers_and_a_flush():
    # the interpreter is not torn down, but nothing the exit handlers or the buffers hold is lost
    code = (
        "import atexit, sys\n"
        "from gpusimhash.__main__ import exit_now\n"
        "atexit.register(lambda: sys.stdout.write(' handler'))\n"
        "sys.stdout.write('buffered')\n"
        "exit_now(3)\n"
    )
    done = run_python(code)
    assert (done.returncode, done.stdout) == (3, "buffered handler")


def test_the_command_waits_for_a_running_thread_before_it_exits():
    code = (
        "import threading, time\n"
        "from gpusimhash.__main__ import exit_now\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "exit_now(4)\n"
    )
    done = run_python(code)
    assert (done.returncode, done.stdout) == (4, "thread done\n")


def test_the_command_line_ends_a_run_with_its_outputs_whole(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("".join(f"text number {i % 7} here\n" for i in range(50)), encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "gpusimhash", "dedup", str(source), "--out", str(out), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len((out / "kept.jsonl").read_text(encoding="utf-8").splitlines()) == 7
    assert (out / "summary.json").read_text(encoding="utf-8").endswith("}\n")
