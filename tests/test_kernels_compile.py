"""Every kernel file compiles with nvcc for sm_90, with every kernel name CuPy asks for."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gpusimhash import _cuda

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


@pytest.mark.parametrize("filename", sorted(_cuda.KERNELS))
def test_kernel_file_compiles_for_sm90(tmp_path, filename):
    names = _cuda.KERNELS[filename]
    # taking each kernel's address instantiates it, as CuPy's name_expressions do
    instantiate = ", ".join(f"(void*)&{name}" for name in names)
    source = tmp_path / filename
    source.write_text(
        _cuda.kernel_source(filename) + f"\nvoid* gsh_instantiate[] = {{{instantiate}}};\n"
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
