"""A write tried again after a short wait: a busy database is usually free a moment later."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

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
    failed every time."""
    for attempt in range(len(delays_s) + 1):
        try:
            await write()
            return True
        except Exception:
            if attempt == len(delays_s):
                log.exception("writing %s failed for good after %d attempts", what, attempt + 1)
                return False
            log.warning("writing %s failed; retrying", what, exc_info=True)
            await sleep(delays_s[attempt])
    return False  # pragma: no cover
