"""Build hook: compile the CPU loops (``gpusimhash/_cpu/*.pyx``, Cython) into the package.

Hatchling runs it for wheels and editable installs alike. The extensions are built in place,
beside their sources, so that an editable install imports them from the checkout; a wheel packs
the ones built for its interpreter (and no other that may lie there). Floating point follows the source strictly
(no fused multiply-add, no fast math): the loops give the same bits as the GPU kernels and the
NumPy references. Threads come from OpenMP where the compiler has it; without it (Apple's
clang) the loops run on one thread and give the same results.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# strict IEEE arithmetic (bit-exact results) and wrapping integer overflow, as the kernels
_COMPILE_ARGS = ["-O3", "-ffp-contract=off", "-fno-fast-math", "-fwrapv"]
_OPENMP = "-fopenmp"


class CompiledLoops(BuildHookInterface):  # type: ignore[type-arg]
    """Cythonize and compile every ``gpusimhash/_cpu/*.pyx`` in place."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Build the extensions; mark the wheel as platform-specific and, for a wheel, pack them."""
        root = Path(self.root).resolve()
        built = build_loops(root)
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version == "standard":  # an editable install imports them from the checkout
            for path in built:
                build_data["force_include"][str(path)] = str(path.relative_to(root))


def build_loops(root: Path) -> list[Path]:
    """Cythonize and compile ``root/gpusimhash/_cpu/*.pyx`` in place, for this interpreter.

    The device check (``bench/device_check/prepare.sh``) calls it with another Python to stage
    that Python's extensions beside this one's. Returns the extension files built.
    """
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    root = Path(root).resolve()
    sources = sorted((root / "gpusimhash" / "_cpu").glob("*.pyx"))
    openmp = [_OPENMP] if _has_openmp() else []
    extensions = [
        Extension(
            ".".join(source.relative_to(root).with_suffix("").parts),
            [str(source)],
            extra_compile_args=_COMPILE_ARGS + openmp,
            extra_link_args=openmp,
        )
        for source in sources
    ]
    distribution = Distribution(
        {
            "package_dir": {"": str(root)},  # the extensions land beside their sources
            "ext_modules": cythonize(
                extensions,
                compiler_directives={"language_level": 3, "embedsignature": True},
                quiet=True,
            ),
        }
    )
    command = distribution.get_command_obj("build_ext")
    command.inplace = True
    command.build_temp = str(root / "build" / f"temp-{sys.implementation.cache_tag}")
    command.ensure_finalized()
    command.run()
    return [Path(command.get_ext_fullpath(extension.name)) for extension in command.extensions]


def _has_openmp() -> bool:
    """Whether the C compiler builds and links a file with ``-fopenmp``."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.errors import CompileError, LinkError
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    folder = tempfile.mkdtemp()
    try:
        source = Path(folder) / "probe.c"
        source.write_text(
            "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n"
        )
        objects = compiler.compile([str(source)], output_dir=folder, extra_postargs=[_OPENMP])
        compiler.link_executable(objects, "probe", output_dir=folder, extra_postargs=[_OPENMP])
    except (CompileError, LinkError):
        print(
            "gpusimhash: no OpenMP in the C compiler: the CPU loops use one thread", file=sys.stderr
        )
        return False
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return True
