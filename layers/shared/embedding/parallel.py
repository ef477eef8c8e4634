"""How the episodic layer uses the machine's cores: BLAS on one thread, work split by us.

Measured on a 2-core machine (``bench/embedding_threads.py``): a BLAS that spreads
one small product over both cores saves a few milliseconds on a quiet machine, and
costs hundreds when another process keeps a core busy — its threads wait on each
other. So every BLAS call runs on one thread, and work that is large enough to
share — a bulk embedding, a search over every stored vector — is cut into pieces
that a small pool runs at once, one piece per core. BLAS's thread count is the
process's, so it is set once, before the first piece of work; changing it while
another thread is inside BLAS is not safe.

One pool serves both. A search can wait behind a bulk embedding's queued batches, which
a serving process does not run: imports and reflection are processes of their own, and
a turn embeds a few texts on its own thread. Work handed to the pool must not hand work
to it again (it would wait for itself).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

# A batch of 32 long texts holds about 100 MB of attention scores while it runs; more
# than four at once would cost memory for little speed (the search is bandwidth-bound).
MAX_WORKERS = 4

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def cores() -> int:
    """The cores this process may run on (a container's limit, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def one_blas_thread() -> None:
    """Pin numpy's BLAS to one thread (idempotent; the first call does it)."""
    _shared_pool()


def map_across_cores(work: Callable[[_Item], _Result], items: Iterable[_Item]) -> Iterator[_Result]:
    """``map(work, items)`` on one thread per core, results in order."""
    return _shared_pool().map(work, items)


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            _pool = ThreadPoolExecutor(
                max_workers=min(cores(), MAX_WORKERS), thread_name_prefix="thoth-cores"
            )
        return _pool
