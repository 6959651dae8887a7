"""Every kernel file compiles with nvcc for sm_90, with every kernel name CuPy asks for."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gpusimhash._gpu import kernels

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def _demangle(names: list[str]) -> list[str]:
    """Demangle C++ symbol names with c++filt where it exists."""
    if shutil.which("c++filt") is None:
        return names
    result = subprocess.run(
        ["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True
    )
    return result.stdout.split("\n")


@pytest.mark.parametrize("filename", sorted(kernels.KERNELS))
def test_kernel_file_compiles_for_sm90(tmp_path, filename):
    names = kernels.KERNELS[filename]
    # taking each kernel's address instantiates it, as CuPy's name_expressions do
    instantiate = ", ".join(f"(void*)&{name}" for name in names)
    source = tmp_path / filename
    source.write_text(
        kernels.kernel_source(filename) + f"\nvoid* gsh_instantiate[] = {{{instantiate}}};\n"
    )
    result = subprocess.run(
        [
            NVCC,
            "-arch=sm_90",
            "-std=c++17",
            "-fmad=false",
            "-Werror",
            "all-warnings",
            "-Xptxas",
            "-v",
            "-cubin",
            "-o",
            str(tmp_path / "out.cubin"),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    compiled = re.findall(r"Compiling entry function '([^']+)' for 'sm_90'", result.stderr)
    demangled = _demangle(compiled)
    for name in names:
        # templates demangle with their return type, plain functions without
        assert any(d.split("(")[0].removeprefix("void ") == name for d in demangled), (
            name,
            demangled,
        )
    spills = re.findall(r"(\d+) bytes spill stores", result.stderr)
    assert spills, result.stderr
    assert all(int(count) == 0 for count in spills), result.stderr


def test_launch_bounds_match_the_launcher():
    """GSH_BLOCK (every kernel's __launch_bounds__) is the launcher's block size."""
    common = (kernels.kernel_dir() / kernels.COMMON_HEADER).read_text(encoding="utf-8")
    assert f"#define GSH_BLOCK {kernels.THREADS_PER_BLOCK}\n" in common
    for filename in ("simhash.cu", "text.cu", "verify.cu"):
        source = (kernels.kernel_dir() / filename).read_text(encoding="utf-8")
        launches = source.count("__global__ void")
        assert source.count("__global__ void __launch_bounds__(GSH_BLOCK") == launches, filename
    with pytest.raises(ValueError, match="threads_per_block"):
        kernels.Launcher(threads_per_block=512)


def _nvrtc_library():
    """Load libnvrtc (the runtime compiler CuPy uses) from the nvidia-cuda-nvrtc wheel, or None."""
    import ctypes
    import ctypes.util
    import importlib.util
    from pathlib import Path

    candidates = []
    for package in ("nvidia.cu13", "nvidia.cuda_nvrtc"):
        try:
            spec = importlib.util.find_spec(package)
        except ModuleNotFoundError:
            continue
        for folder in spec.submodule_search_locations if spec else []:
            candidates += sorted(Path(folder, "lib").glob("libnvrtc.so*"))
    found = ctypes.util.find_library("nvrtc")
    candidates += [found] if found else []
    for candidate in candidates:
        try:
            return ctypes.CDLL(str(candidate))
        except OSError:
            continue
    return None


@pytest.mark.parametrize("filename", sorted(kernels.KERNELS))
def test_kernel_file_compiles_with_nvrtc_as_cupy_does(filename):
    """The runtime path: NVRTC (no host headers), the same options and name expressions."""
    import ctypes

    library = _nvrtc_library()
    if library is None:
        pytest.skip("libnvrtc is not installed (pip install nvidia-cuda-nvrtc)")
    program = ctypes.c_void_p()
    source = kernels.kernel_source(filename).encode()
    assert (
        library.nvrtcCreateProgram(ctypes.byref(program), source, filename.encode(), 0, None, None)
        == 0
    )
    names = kernels.KERNELS[filename]
    for name in names:
        assert library.nvrtcAddNameExpression(program, name.encode()) == 0
    # what CuPy 14 appends to the module's options on an sm_90 device (cubin output)
    cupy_options = ("-ftz=true", "-arch=sm_90", "--device-as-default-execution-space")
    options = [option.encode() for option in (*kernels.COMPILE_OPTIONS, *cupy_options)]
    status = library.nvrtcCompileProgram(
        program, len(options), (ctypes.c_char_p * len(options))(*options)
    )
    log_size = ctypes.c_size_t()
    library.nvrtcGetProgramLogSize(program, ctypes.byref(log_size))
    log = ctypes.create_string_buffer(log_size.value)
    library.nvrtcGetProgramLog(program, log)
    assert status == 0, log.value.decode(errors="replace")
    for name in names:
        lowered = ctypes.c_char_p()
        assert library.nvrtcGetLoweredName(program, name.encode(), ctypes.byref(lowered)) == 0
        assert lowered.value.startswith(b"_Z")
    library.nvrtcDestroyProgram(ctypes.byref(program))
