"""Freed arrays go back to the system once `return_freed_memory` has run (glibc's malloc)."""

import platform
import subprocess
import sys

import pytest

FREED = """
import numpy as np
from gpusimhash._memory import return_freed_memory

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

fixed = {fixed}
if fixed:
    assert return_freed_memory()
big = np.ones(24 << 20, np.uint8)  # mapped on its own; freeing it raises glibc's moving limit
del big
before = resident()
middle = np.ones(16 << 20, np.uint8)  # below the moved limit: from the heap, kept when freed
del middle
print(resident() - before)
"""


def kept_after_free(fixed):
    done = subprocess.run(
        [sys.executable, "-c", FREED.format(fixed=fixed)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return int(done.stdout)


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc"
)
def test_a_freed_array_is_given_back_with_the_fixed_threshold():
    # without the fix, glibc's moving limit usually keeps the freed middle array (12+ MiB here;
    # not on every machine, so only the fixed behaviour is asserted)
    assert kept_after_free(fixed=True) < 4 << 20
