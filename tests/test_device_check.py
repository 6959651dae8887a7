"""The device check (bench/device_check) runs here: a dry run of the one command, and its parts.

A lent GPU gives one try of a few minutes, so the check must not fail for reasons a machine
without a GPU can find: the dry run runs every CPU part for real at small sizes (the CPU
baselines with their worker processes, started after Numba's threads, the CPU joins in
spawned processes, the comparisons against the CPU stand-in, the JSON after every section,
the tests' collection) and records every GPU part as skipped. A hang fails the run's time
limit; a crash, a section that writes nothing or an error fails the assertions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "bench" / "device_check"
sys.path.append(str(CHECK))

import check
import environment
from report import Report

SECTIONS = {  # in order; True: runs in a dry run, False: a GPU part, recorded as skipped
    "environment": True,
    "cpu_compile_warm_up": True,
    "gpu_probe": False,
    "fingerprint_warm_up": False,
    "parity": True,
    "verify_parity": True,
    "join_gpu_128_r18_medium": True,
    "join_gpu_64_r3_medium": True,
    "join_cpu_compare_128_r18_medium": True,
    "join_cpu_compare_64_r3_medium": True,
    "knn_gpu_64_k10": True,
    "copy_bandwidth_bytes_per_s": False,
    "accumulate": False,
    "device_text": False,
    "end_to_end_gpu": False,
    "verify_bench_gpu": False,
    "join_gpu_128_r18_big": False,
    "join_gpu_64_r3_big": False,
    "knn_gpu_128_k10": False,
    "verify_bench_cpu": True,
    "cpu_baseline": True,
    "ratios": True,
    "pytest_gpu": True,
}


def _corpus(path: Path) -> Path:
    words = ["fast", "JSON", "parser", "for", "Python", "a", "tiny", "web", "framework", "été"]
    lines = [
        " ".join(words[(i * 7 + j) % len(words)] for j in range(i % 9 + 1)) for i in range(500)
    ]
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_the_dry_run_runs_every_cpu_part(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "CHECKS": "dry",
        "CORPUS": str(_corpus(tmp_path / "corpus.txt.gz")),
        "PYTHON": sys.executable,
    }
    done = subprocess.run(
        ["bash", str(CHECK / "run.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,  # the check's own limit is 480 s; a dry run takes well under a minute
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    log = (out / "check.log").read_text().splitlines()
    assert log[0].startswith("environment: ok | wheels "), log[0]
    assert "(dry run: no GPU used)" in log[0]
    result = json.loads((out / "device_check.json").read_text())
    assert result["errors"] == {}
    assert "running" not in result
    assert result["section_order"] == list(SECTIONS)
    assert set(result["groups"]) == {name for name, _ in check.GROUPS}
    assert all(group["exit_code"] == 0 for group in result["groups"].values())
    for name, runs in SECTIONS.items():
        assert result[name], name  # every section wrote something
        assert (name in result["skipped"]) == (not runs), name
        if not runs:
            assert result[name] == {"skipped": "needs gpu: not used (dry run)"}
    for record in result["parity"] + result["verify_parity"]:
        assert record["identical"], record
        assert record["side"] == "cpu stand-in (dry run: no GPU)"
    texts = [r["what"] for r in result["parity"] if r["what"].startswith(("text/", "utf8/"))]
    assert {what.split("/")[1] for what in texts} == {"random", "real"}
    for name in ("join_cpu_compare_128_r18_medium", "join_cpu_compare_64_r3_medium"):
        assert result[name]["pairs_identical"]
        assert result[name]["inverse_identical"]
    assert result["knn_gpu_64_k10"]["identical_to_faiss"] is True
    baseline = result["cpu_baseline"]
    assert baseline["workers"] == 2
    assert baseline["start_method"] == "spawn"
    for key in ("text_processes_s", "csr_kernel_processes_s", "text_one_process_s", "csr_api_s"):
        assert baseline[key] > 0
    assert all(str(v).startswith("missing: ") for v in result["ratios"].values())
    assert result["pytest_gpu"]["exit_code"] == 0
    assert " tests collected" in (out / "pytest_gpu.log").read_text()
    assert sorted(p.name for p in out.iterdir()) == [
        "check.log",
        "device_check.json",
        "pytest_gpu.log",
    ]


def test_a_missing_need_skips_its_section_and_the_next_one_runs(tmp_path: Path) -> None:
    path = tmp_path / "check.json"
    report = Report(path, fresh=True)
    report.result["environment"] = {
        "available": {"gpu": "CuPy failed: ImportError: no cupy", "corpus": True, "faiss": True}
    }
    assert report.section("on_gpu", lambda: pytest.fail("ran without a GPU"), ("gpu",)) is None
    assert report.section("broken", lambda: 1 / 0) is None
    assert report.section("on_cpu", lambda: {"seconds": 1.5}, ("corpus",)) == {"seconds": 1.5}
    stored = json.loads(path.read_text())
    assert stored["section_order"] == ["on_gpu", "broken", "on_cpu"]
    assert stored["skipped"] == {"on_gpu": "needs gpu: CuPy failed: ImportError: no cupy"}
    assert stored["errors"]["broken"]["error"] == "ZeroDivisionError: division by zero"
    assert stored["on_cpu"] == {"seconds": 1.5}
    assert "running" not in stored


def test_the_first_line_names_a_missing_carry_and_a_failed_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # its import raises ModuleNotFoundError
    record = environment.probe(tmp_path / "missing.txt.gz", dry_run=True)
    line = environment.summary(record)
    assert line.startswith("environment: PROBLEMS: corpus: no corpus at ")
    assert "; faiss: import failed: ModuleNotFoundError: " in line
    assert record["available"]["faiss"].startswith("import failed")
    report = Report(tmp_path / "check.json", fresh=True)
    report.result["environment"] = record
    report.section("knn_checked", lambda: None, ("faiss",))
    report.section("fingerprints", lambda: "ran")
    assert report.result["fingerprints"] == "ran"
    assert report.result["knn_checked"]["skipped"].startswith("needs faiss: import failed")


def test_a_group_killed_at_its_cap_is_recorded(tmp_path: Path) -> None:
    args = argparse.Namespace(out=tmp_path, corpus=tmp_path / "none.gz", dry_run=True)
    path = tmp_path / check.JSON_NAME
    Report(path, fresh=True)
    start = time.perf_counter()
    status = check._run_group("environment", 1.0, args, capture=True)
    assert time.perf_counter() - start < 30
    assert status["exit_code"] == "killed at its cap of 1 s"
    result: dict[str, Any] = check._record_group(path, "environment", status)
    assert result["groups"]["environment"]["exit_code"] == "killed at its cap of 1 s"
    running = [
        name for name, error in result["errors"].items() if "group environment" in error["error"]
    ]
    assert running in ([], ["environment"], ["cpu_compile_warm_up"])  # where it was, if started
    assert "running" not in json.loads(path.read_text())
