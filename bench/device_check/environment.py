"""The device check's first group: what is there (carry, imports, GPU), and warm CPU caches.

``probe`` records the carried paths (``.whl`` wheels and how pip installed them, the corpus),
each import's version or error, Numba's threading layer after a tiny parallel loop and whether
the GNU OpenMP runtime is present, and the GPU (CuPy's device properties, NVRTC and runtime
versions, ``nvidia-smi``). Its ``available`` entry says, for each need of a later section
(``gpu``, ``corpus``, ``faiss``), True or why not; ``summary`` turns it into the log's first
line.

``warm_cpu`` compiles the CPU loops the later sections use (text and feature fingerprints,
the join, verification), one family per process, all at once, into the shared Numba cache:
with cold caches a compile would otherwise land inside a capped section.
"""

from __future__ import annotations

import ctypes.util
import glob
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
IMPORTS = ("numpy", "numba", "scipy", "orjson", "faiss", "pyarrow", "cupy")
SMI_FIELDS = "name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu"
WARM_FAMILIES = ("text", "features", "join", "verify")


def _version(name: str) -> str | None:
    """The module's version, or None; raises what the import raises."""
    return str(getattr(importlib.import_module(name), "__version__", "unknown"))


def nvidia_smi() -> str:
    """``nvidia-smi``'s CSV line for the GPU (name, driver, memory, clocks), or why not."""
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nvidia-smi failed: {type(error).__name__}: {error}"
    return (done.stdout or done.stderr).strip()


def _threading_layer() -> str:
    """Numba's threading layer, chosen by running a tiny parallel loop here."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def total(values: Any) -> Any:  # pragma: no cover - compiled
        result = 0.0
        for i in numba.prange(values.size):
            result += values[i]
        return result

    total(np.ones(64))
    return str(numba.threading_layer())


def _gpu(dry_run: bool) -> tuple[Any, dict[str, Any]]:
    """True or why no GPU is usable, and what CuPy says about it."""
    if dry_run:
        return "not used (dry run)", {}
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        if count == 0:
            return "CuPy sees no CUDA device", {}
        props = cupy.cuda.runtime.getDeviceProperties(0)
        info = {
            "gpu": props["name"].decode(),
            "devices": count,
            "sm_count": props["multiProcessorCount"],
            "memory_bytes": props["totalGlobalMem"],
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "driver": cupy.cuda.runtime.driverGetVersion(),
            "nvrtc": cupy.cuda.nvrtc.getVersion(),
        }
    except Exception as error:  # noqa: BLE001 - recorded: every GPU section is skipped
        return f"CuPy failed: {type(error).__name__}: {error}", {}
    return True, info


def probe(corpus: Path, dry_run: bool) -> dict[str, Any]:
    """What the later sections can use, and the versions of everything."""
    wheels = sorted(Path(p).name for p in glob.glob(str(ROOT / ".whl" / "*.whl")))
    pip_log = os.environ.get("PIP_LOG")
    record: dict[str, Any] = {
        "dry_run": dry_run,
        "carry": {
            "wheels": wheels,
            "pip_exit_code": os.environ.get("PIP_RC"),
            "pip_log_tail": Path(pip_log).read_text()[-2000:] if pip_log else None,
            "corpus": str(corpus) if corpus.is_file() else None,
        },
        "imports": {},
        "libgomp": ctypes.util.find_library("gomp"),
        "python": sys.version,
    }
    for name in IMPORTS:
        if name == "cupy" and dry_run:
            record["imports"][name] = "not used (dry run)"
            continue
        try:
            record["imports"][name] = _version(name)
        except Exception as error:  # noqa: BLE001 - recorded: the sections that need it skip
            record["imports"][name] = f"import failed: {type(error).__name__}: {error}"
    try:
        record["numba_threading_layer"] = _threading_layer()
    except Exception as error:  # noqa: BLE001 - recorded: the CPU path cannot run
        record["numba_threading_layer"] = f"failed: {type(error).__name__}: {error}"
    gpu, record["gpu"] = _gpu(dry_run)
    if not dry_run:
        record["nvidia_smi"] = nvidia_smi()
    faiss = record["imports"]["faiss"]
    record["available"] = {
        "gpu": gpu,
        "corpus": True if corpus.is_file() else f"no corpus at {corpus} (prepare.sh copies it)",
        "faiss": True if not faiss.startswith("import failed") else faiss,
    }
    return record


def summary(record: dict[str, Any]) -> str:
    """The log's first line: ``environment: ok ...`` or ``environment: PROBLEMS ...``."""
    problems = [
        f"{need}: {state}"
        for need, state in record["available"].items()
        if state is not True and not (need == "gpu" and record["dry_run"])
    ]
    problems += [
        f"{name} {version}"
        for name, version in record["imports"].items()
        if version.startswith("import failed") and name != "faiss"
    ]
    pip = record["carry"]["pip_exit_code"]
    if record["carry"]["wheels"] and pip != "0":
        problems.append(f"pip install of .whl exited {pip} (log in the JSON)")
    layer = record["numba_threading_layer"]
    if layer.startswith("failed"):
        problems.append(f"numba parallel loop {layer}")
    versions = ", ".join(f"{k} {v}" for k, v in record["imports"].items() if v[:1].isdigit())
    where = " (dry run: no GPU used)" if record["dry_run"] else f" on {record['gpu'].get('gpu')}"
    carried = f"wheels {record['carry']['wheels'] or 'none'}"
    if problems:
        return f"environment: PROBLEMS: {'; '.join(problems)} | {carried}; {versions}{where}"
    return f"environment: ok | {carried}; {versions}; numba layer {layer}{where}"


def _warm(family: str) -> None:
    """Compile (or load from the cache) the CPU loops of one family on tiny inputs."""
    import numpy as np

    from gpusimhash import fingerprint, near_duplicate_groups
    from gpusimhash._cpu._verify_loops import merge_documents, pair_similarities
    from gpusimhash.text import TextFeaturizer
    from gpusimhash.utf8 import Utf8Texts

    texts = ["the cat sat", "Été straße", "", "a b c d"] * 8
    if family == "text":
        for featurizer in (
            TextFeaturizer(),
            TextFeaturizer("word", 2, "binary"),
            TextFeaturizer("char", 3, "logtf"),
            TextFeaturizer(weighting="tfidf").fit(texts),
        ):
            fingerprint(texts, bits=64, featurizer=featurizer, device="cpu")
            fingerprint(
                Utf8Texts.from_strings(texts), bits=256, featurizer=featurizer, device="cpu"
            )
    elif family == "features":
        fingerprint([{"a": 1.5, "b": -2.0}, {}], bits=64, device="cpu")
        fingerprint([{"a": 1, "b": 1}], bits=1024, device="cpu")
    elif family == "join":
        rng = np.random.default_rng(0)
        for width, radius in ((8, 3), (16, 18), (32, 40)):
            codes = rng.integers(0, 256, (64, width), dtype=np.uint8)
            near_duplicate_groups(codes, max_distance=radius, device="cpu")
    elif family == "verify":
        states = np.array([1, 2, 2, 3], np.uint32)
        merged = merge_documents(states, np.array([0, 2, 4], np.int64), np.ones(4))
        pair_similarities(*merged, np.array([0, 1]), np.array([1, 1]))


def warm_cpu(timeout_s: float) -> dict[str, Any]:
    """Warm every family in its own process, all at once; seconds and exit code of each."""
    start = time.perf_counter()
    processes = {
        family: subprocess.Popen([sys.executable, __file__, "--warm", family], cwd=ROOT)
        for family in WARM_FAMILIES
    }
    record: dict[str, Any] = {}
    for family, process in processes.items():
        try:
            code = process.wait(timeout=max(1.0, timeout_s - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            process.kill()
            code = f"killed after {timeout_s} s"
        record[family] = {"exit_code": code, "done_after_s": round(time.perf_counter() - start, 2)}
    failed = {k: v for k, v in record.items() if v["exit_code"] != 0}
    if failed:
        raise RuntimeError(f"warming the CPU loops failed: {failed}")
    return record


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _warm(sys.argv[sys.argv.index("--warm") + 1])
