"""Two pieces of recall's work at once, when each is a wait on the database.

On PostgreSQL both searches run in the server: the search by words and the search by
meaning are two queries that need nothing of each other, and each waits on its own
connection (the pool holds several). Run one after the other they cost their sum; on
two threads, about the longer (measured at 100k episodes: 7.7 ms and 12 ms). The
embedded engine's searches are work of this process, already spread over the cores
(``layers/shared/embedding/parallel.py``): there a second thread would only contend.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

_First = TypeVar("_First")
_Second = TypeVar("_Second")

# A serving process answers a few recalls at once; each hands up to two lookups here
# at a time. When all are busy, a caller runs its second lookup itself (``at_once``).
MAX_WAITING = 8

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


class Both(Protocol):
    def __call__(self, first: Callable[[], _First],
                 second: Callable[[], _Second]) -> tuple[_First, _Second]: ...


def at_once(first: Callable[[], _First],
            second: Callable[[], _Second]) -> tuple[_First, _Second]:
    """``(first(), second())``, the second on a thread of its own meanwhile; when no
    thread was free by the time the first is done, the second runs here (a caller never
    waits for a thread to start its work)."""
    pending = _waiting_pool().submit(second)
    try:
        done_first = first()
    except BaseException:
        # Not left running behind the first's error, which is the one raised (the
        # second's own error, if any, is logged).
        if not pending.cancel():
            wait([pending])
            if pending.exception() is not None:
                log.debug("the second of two lookups failed too", exc_info=pending.exception())
        raise
    if pending.cancel():
        return done_first, second()
    return done_first, pending.result()


def one_then_other(first: Callable[[], _First],
                   second: Callable[[], _Second]) -> tuple[_First, _Second]:
    """``(first(), second())`` on this thread."""
    return first(), second()


def _waiting_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_WAITING,
                                       thread_name_prefix="thoth-round-trips")
        return _pool
