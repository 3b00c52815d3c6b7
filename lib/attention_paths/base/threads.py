"""BLAS thread control for the many small dense operations of the solver.

numpy and scipy each ship their own OpenBLAS; with several threads each, their thread pools
compete for the cores between consecutive small calls and a 150 x 150 solve can run 20 times
slower than on one thread.  Small problems therefore run single-threaded.
"""

from __future__ import annotations

import contextlib

from threadpoolctl import threadpool_limits

__all__ = ["blas_threads_for"]

# Below this many training points the dense algebra is faster on one BLAS thread.
SINGLE_THREAD_BELOW_P = 1000


def blas_threads_for(P: int):
    """Context manager limiting BLAS to one thread when ``P`` is small, else a no-op."""
    if P < SINGLE_THREAD_BELOW_P:
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()
