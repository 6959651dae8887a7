"""A cache prefetch hint for compiled loops (Numba has none of its own).

Verifying a candidate pair reads two documents' features from far apart in memory: a loop that
walks one pair after another waits for each cache miss in turn. Announcing the features of the
next pairs first (`prefetch`) lets the memory system fetch them all at once: the star loop's
comparisons run about twice as fast on a corpus whose features exceed the caches (see
``_cluster_loops``). A hint changes no result: it only moves data into the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# llvm.prefetch(address, rw=0 (read), locality=3 (keep in all levels), cache=1 (data))
_READ, _KEEP, _DATA = 0, 3, 1


@intrinsic
def _prefetch(typingctx: Any, array: Any, index: Any) -> Any:  # pragma: no cover - compiled
    """Hint that ``array[index]`` is read soon (compiled code only; no bounds check, no fault).

    A prefetch of an address outside the array is harmless: the hint never faults.
    """
    signature = types.void(array, index)

    def codegen(context: Any, builder: Any, sig: Any, arguments: Any) -> Any:
        data = context.make_array(sig.args[0])(context, builder, arguments[0]).data
        byte_pointer = ir.IntType(8).as_pointer()
        address = builder.bitcast(builder.gep(data, [arguments[1]]), byte_pointer)
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0i8",
        )
        builder.call(function, [address, *(ir.Constant(int32, v) for v in (_READ, _KEEP, _DATA))])
        return context.get_dummy_value()

    return signature, codegen


prefetch = cast(Callable[[np.ndarray, int], None], _prefetch)
