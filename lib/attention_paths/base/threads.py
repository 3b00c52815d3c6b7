"""BLAS thread control for the many small dense operations of the solver.

numpy and scipy each ship their own OpenBLAS; with several threads each, their thread pools
compete for the cores between consecutive small calls and a 150 x 150 solve can run 20 times
slower than on one thread.  Small problems therefore run single-threaded.
"""

from __future__ import annotations

import contextlib
import os

from threadpoolctl import threadpool_limits

__all__ = ["blas_threads_for", "blas_threads_for_work"]

# Below this many training points the dense algebra is faster on one BLAS thread.
SINGLE_THREAD_BELOW_P = 1000


# At or above this many entries of the features (P x N0 x paths) every evaluation's products are large enough
# for all the cores (64 paths at P = 600 and N0 = 192: 7.4 million; 16 and 27 paths run faster on one).
ALL_THREADS_FROM_FEATURES = 5_000_000


def blas_threads_for(P: int, features_size: int | None = None):
    """Context manager limiting BLAS to one thread when ``P`` is small, else a no-op.

    ``features_size`` (``P N0 Pi``, when given) lifts the limit for problems whose every evaluation is
    dominated by large products (:data:`ALL_THREADS_FROM_FEATURES`)."""
    if features_size is not None and features_size >= ALL_THREADS_FROM_FEATURES:
        return contextlib.nullcontext()
    if P < SINGLE_THREAD_BELOW_P:
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


# Above this many multiply-adds, one call's dense algebra is worth all the cores even inside a
# single-threaded section (the explicit Hessian at 27 paths and more: benchmarks/README.md).
ALL_THREADS_ABOVE_MACS = 2e10


def blas_threads_for_work(macs: float):
    """Context manager giving BLAS every core for a step of ``macs`` multiply-adds or more, else a no-op
    (the surrounding limit, if any, stays)."""
    if macs >= ALL_THREADS_ABOVE_MACS:
        return threadpool_limits(limits=os.cpu_count() or 1, user_api="blas")
    return contextlib.nullcontext()
