"""A write tried again after a short wait: a busy database is usually free a moment later.

A full disk is not waited for (``StorageFull``): it stays full until someone frees space,
which is minutes at best, so the write is given up at once, in one line, and the writes
after it go through as soon as there is room. Each failed attempt is one line, without a
traceback: a database away for a minute must not flood the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from layers.shared.errors import StorageFull
from layers.shared.one_line import one_line

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


async def write_retried(
    what: str,
    write: Callable[[], Awaitable[object]],
    *,
    delays_s: Sequence[float],
    sleep: Sleep = asyncio.sleep,
) -> bool:
    """Await ``write`` (a store's ``Offloaded.run``: the write itself runs in a thread),
    again after each of ``delays_s`` while it fails; False (logged, never raised) when it
    failed every time, or at once when the disk is full.

    Logged: one line when a write first fails, one when it gives up (the tries between
    are at debug level: a database away fails every write the same way)."""
    for attempt in range(len(delays_s) + 1):
        try:
            await write()
            return True
        except StorageFull:
            log.warning("%s is not kept: the database's disk is full", what)
            return False
        except Exception as error:
            if attempt == len(delays_s):
                log.exception("writing %s failed for good after %d attempts", what, attempt + 1)
                return False
            (log.warning if attempt == 0 else log.debug)(
                "writing %s failed (%s); retrying", what, _one_line(error))
            await sleep(delays_s[attempt])
    return False  # pragma: no cover


def _one_line(error: Exception) -> str:
    return one_line(f"{type(error).__name__}: {error}")
