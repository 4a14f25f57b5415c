"""When the server's counting loops run compiled, and on how many threads (docs/math.md §8.3, §8.4).

The compiled kernels (``compiled``) need numba (``pip install "lipdesign[fast]"``); without it, or for less than
``COMPILED_WORK`` of work, the numpy code counts. Both give the same integers. Numpy only.
"""

import contextlib
import importlib.util
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np

#: The work in one batch (64-bit words of OUE reports, or OLH hash tests: 20-40 ms in numpy) from which the
#: compiled kernels count. Loading them costs a process under a second once (numba's import and its cache on
#: disk; a few seconds the first time after an install, when they are compiled), which a server counting many
#: batches repays; smaller batches never load numba.
COMPILED_WORK = 2**22


@cache
def _kernels():
    if not np.little_endian or importlib.util.find_spec("numba") is None:
        return None
    try:
        from lipdesign.mechanisms import compiled
    except (ImportError, RuntimeError, OSError) as error:  # numba present but unusable (a numpy it does not
        # support, no writable cache): numpy counts the same
        warnings.warn(f"numba is installed but its kernels did not load ({type(error).__name__}: {error}); the "
                      "server counts with numpy (the same counts, slower)", RuntimeWarning, stacklevel=3)
        return None
    return compiled


def compiled_kernels(work):
    """The module ``compiled`` for a count of ``work`` (see COMPILED_WORK), or None: numba is not installed, work
    < COMPILED_WORK, or the machine is big-endian (report bytes are read as little-endian words)."""
    return _kernels() if work >= COMPILED_WORK else None


def threads():
    """Threads for the compiled kernels: the cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def sum_in_threads(n, rows_per_thread, count):
    """sum of ``count(start, stop)`` (integer arrays) over n rows split into contiguous ranges, one per thread
    (``threads``, at most one per ``rows_per_thread`` rows); the kernels release the GIL, and integer sums are
    exact in any order."""
    parts = max(1, min(threads(), -(-n // rows_per_thread)))
    bounds = [n * part // parts for part in range(parts + 1)]
    if parts == 1:
        return count(0, n)
    with ThreadPoolExecutor(parts) as pool:
        return sum(pool.map(count, bounds[:-1], bounds[1:]))


def one_blas_thread():
    """A context in which every BLAS and OpenMP pool of the process runs one thread, where threadpoolctl is
    installed (the designer's install; the runtime's has no BLAS-heavy loops without it, and runs as is). The
    decoders of the open-domain families solve and multiply K x K matrices, some once per cohort: threads that
    spin-wait between those calls stall on a shared machine (3-4 s against 0.3 s at K = 1,000, measured)."""
    if importlib.util.find_spec("threadpoolctl") is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)
