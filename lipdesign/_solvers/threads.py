"""One BLAS/OpenMP thread inside the designer's solver loops.

The designer's loops solve many small dense systems (k x k to a few thousand square). A multi-threaded OpenBLAS
splits each one across threads that spin-wait for each other between calls; when another process holds a core,
the waiting thread is descheduled and every call stalls (measured at k = 12: 113-201 s with the default threads
beside other work, against 12.5 s with one thread; benchmarks/design.py prints both). One thread per process is
also what a user running several designs at once wants. ``threadpoolctl`` sets the limit on every BLAS and OpenMP
library loaded in the process (numpy's, scipy's and cvxpy's OpenBLAS are separate libraries) and restores the
previous limits on exit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from threadpoolctl import threadpool_limits

P = ParamSpec("P")
R = TypeVar("R")


def one_thread(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run with every BLAS and OpenMP thread pool of the process limited to one thread (the previous
    limits come back when it returns or raises); the undecorated function stays reachable as ``__wrapped__``."""

    @functools.wraps(function)
    def limited(*args: P.args, **kwargs: P.kwargs) -> R:
        with threadpool_limits(limits=1):
            return function(*args, **kwargs)

    return limited
