"""dedup interrupted, failing or fed a changing file: exit 130 quietly, outputs whole or absent."""

import json
import signal
import subprocess
import sys
import time

import pytest

from gpusimhash import _interrupts
from gpusimhash._output_names import MANIFEST, written_by_dedup
from gpusimhash.cli import dedup as dedup_command
from gpusimhash.cli import main
from gpusimhash.dedup import pipeline


def write_docs(path, n, word="topic"):
    lines = (
        json.dumps({"text": f"document {i % (n // 2 + 1)} on {word} {i % 97}"}) for i in range(n)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def hidden_siblings(folder):
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith("."))


@pytest.fixture
def earlier_run(tmp_path):
    source = tmp_path / "in.jsonl"
    write_docs(source, 40)
    out = tmp_path / "out"
    assert (
        main(["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"])
        == 0
    )
    return source, out, snapshot(out)


def test_interrupt_in_a_compiled_call_is_a_quiet_130(monkeypatch, capsys, earlier_run):
    source, out, before = earlier_run

    def compiled_call_interrupted(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("CPUDispatcher(<function word_runs>) returned a result") from None

    monkeypatch.setattr(pipeline, "_join", compiled_call_interrupted)
    assert (
        main(["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"])
        == 130
    )
    assert capsys.readouterr().err == "gpusimhash: interrupted\n"
    assert snapshot(out) == before


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_a_run_stopped_after_writing_kept_leaves_the_earlier_outputs(
    monkeypatch, capsys, earlier_run, failure
):
    source, out, before = earlier_run
    write_docs(source, 60, word="other")

    def stopped(*args, **kwargs):
        raise failure(28, "No space left on device")

    monkeypatch.setattr(pipeline, "write_duplicates", stopped)
    code = main(
        ["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"]
    )
    assert code == (130 if failure is KeyboardInterrupt else 1)
    assert snapshot(out) == before
    assert hidden_siblings(out) == []
    capsys.readouterr()


def test_a_finished_run_replaces_every_earlier_output(earlier_run):
    source, out, before = earlier_run
    assert "report.md" in before
    write_docs(source, 60, word="other")
    args = ["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"]
    assert main([*args, "--output-format", "parquet", "--no-report"]) == 0
    assert sorted(snapshot(out)) == [MANIFEST, "duplicates.parquet", "kept.parquet", "summary.json"]
    assert hidden_siblings(out) == []


def test_a_file_rewritten_between_the_passes_is_refused(monkeypatch, capsys, earlier_run):
    source, out, before = earlier_run
    join = pipeline._join

    def rewrite_then_join(*args, **kwargs):
        text = source.read_text(encoding="utf-8")
        source.write_text(text.replace("topic", "TOPIC"), encoding="utf-8")  # same size
        return join(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_join", rewrite_then_join)
    assert (
        main(["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"])
        == 1
    )
    assert "in.jsonl: changed while it was read (rewritten)" in capsys.readouterr().err
    assert snapshot(out) == before


def test_a_pipe_is_refused_before_any_work(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "gpusimhash", "dedup", "/dev/stdin", "--out", str(out), "-q"],
        input="".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(50)),
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("gpusimhash: error: /dev/stdin: not a regular file (a pipe")
    assert "give - to read standard input" in done.stderr
    assert list(out.iterdir()) == []


def test_a_folder_with_other_files_is_not_replaced(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    write_docs(source, 10)
    assert main(["dedup", str(source), "--out", str(tmp_path), "-q", "--overwrite"]) == 1
    assert "holds files this run would not write (in.jsonl)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_abandoned_staging_folders_are_removed(earlier_run):
    source, out, _ = earlier_run
    abandoned = out.parent / f".{out.name}.dead1234.staging"
    abandoned.mkdir()
    (abandoned / "kept.jsonl").write_text("half")
    assert (
        main(["dedup", str(source), "--out", str(out), "-q", "--max-distance", "3", "--overwrite"])
        == 0
    )
    assert hidden_siblings(out) == []


def test_earlier_outputs_are_recognised():
    owned = written_by_dedup
    written = ["kept.jsonl", "duplicates.parquet", "report.md", "summary.json", "kept.csv"]
    assert all(map(owned, [*written, "pairs.jsonl", "in_index.jsonl", "annotated.parquet"]))
    assert not any(map(owned, ["kept.txt", "notes.txt", "input.jsonl", "pairs.txt"]))


# what `python -m gpusimhash` and the `gpusimhash` script run once the interpreter has started
# and found the entry point (a Ctrl-C before that is Python's own): a line on stderr says when
# "started" is written once run() has installed its Ctrl-C recorder: a SIGINT sent earlier would land
# in this harness's own statements (the real script enters run() at once)
STARTED = (
    "import sys; from gpusimhash import _interrupts; from gpusimhash.__main__ import run\n"
    "install = _interrupts.install\n"
    "def announced():\n"
    "    install(); sys.stderr.write('started\\n'); sys.stderr.flush()\n"
    "_interrupts.install = announced; sys.argv[0] = 'gpusimhash'; run()"
)


def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(tmp_path):
    source = tmp_path / "in.jsonl"
    write_docs(source, 40_000)
    for n, moment in enumerate([0.0, 0.01, 0.03, 0.08, 0.15, 0.3, 0.6, 1.0]):
        out = tmp_path / f"out{n}"
        process = subprocess.Popen(
            # candidates at radius 0: these look-alike documents would otherwise trip the guard
            # rail; a crash prints every thread's stack (faulthandler), for the message below
            [sys.executable, "-X", "faulthandler", "-c", STARTED, "dedup", str(source)]
            + ["--out", str(out)]
            + ["--bits", "64", "--max-distance", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stderr.readline() == "started\n"
        time.sleep(moment)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
        if process.returncode == 0:  # finished first: complete outputs
            assert (out / "summary.json").exists()
            continue
        assert process.returncode == 130, (moment, stderr)
        assert "Traceback" not in stderr, (moment, stderr)
        assert stderr.rstrip("\n").rsplit("\n", 1)[-1].endswith("gpusimhash: interrupted")
        assert not out.exists() or list(out.iterdir()) == []
    assert hidden_siblings(tmp_path / "out0") == []


def test_errors_name_the_output_folder_not_the_staging_one(tmp_path, capsys):
    source = tmp_path / "mixed.jsonl"
    docs = [{"id": i if i % 2 else f"s{i}", "text": f"t {i % 5}"} for i in range(20)]
    source.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "out"
    args = ["dedup", str(source), "--id-field", "id", "--output-format", "parquet", "-q"]
    assert main([*args, "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert f"{out}/kept.parquet: records do not fit the Parquet columns (field 'id'" in error
    assert ".staging" not in error


def test_an_import_error_after_a_ctrl_c_is_reported_as_the_interrupt(monkeypatch, capsys):
    # NumPy turns a Ctrl-C during its import into an ImportError without the interrupt in its
    # chain: the recorded signal decides
    def numpy_interrupted(args):
        raise ImportError("IMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!")

    monkeypatch.setattr(dedup_command, "run_dedup", numpy_interrupted)
    assert main(["dedup", "x.jsonl"]) == 1  # no Ctrl-C: an ordinary error
    monkeypatch.setattr(_interrupts, "_seen", True)
    assert main(["dedup", "x.jsonl"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "gpusimhash: interrupted"


def test_a_ctrl_c_while_numba_compiles_is_raised_once_the_compilation_is_over(monkeypatch):
    # a KeyboardInterrupt between two of llvmlite's calls leaves an LLVM module that is later
    # freed twice: the process dies of a segmentation fault instead of exiting 130
    from numba import njit
    from numba.core import event

    @njit(cache=False)
    def never_compiled(x):
        return x + 1

    class CtrlCAtTheStart(event.Listener):
        def on_start(self, event):
            signal.raise_signal(signal.SIGINT)  # delivered inside the compilation

        def on_end(self, event):
            pass

    monkeypatch.setattr(_interrupts, "_seen", False)  # restored after the test
    previous = signal.getsignal(signal.SIGINT)
    _interrupts.install()
    try:
        with (
            event.install_listener("numba:compile", CtrlCAtTheStart()),
            pytest.raises(KeyboardInterrupt),
        ):
            never_compiled(1)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _interrupts.seen()
    assert len(never_compiled.signatures) == 1  # the compilation ran to its end first
    assert never_compiled(1) == 2
