"""Run a context source under its own deadline; a slow or failing one is left out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

from layers.shared.one_line import one_line

log = logging.getLogger(__name__)

T = TypeVar("T")


class MissedDeadlines:
    """Says the first time a source misses its deadline, then only every tenfold count:
    a slow backend must not write a warning on every turn."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def missed(self, name: str, seconds: float) -> None:
        count = self._counts[name] = self._counts.get(name, 0) + 1
        if count == 1:
            log.warning("context source %s missed its %.2fs deadline; left out", name, seconds)
        elif count in (10, 100, 1_000, 10_000):
            log.warning("context source %s has missed its deadline %d times", name, count)


async def within_deadline(
    name: str, seconds: float, work: Awaitable[T], misses: MissedDeadlines
) -> T | None:
    """``work``'s result, or None (logged) if it fails or takes longer than ``seconds``.

    A source that runs in a worker thread keeps running after its deadline; its
    result is simply not waited for, so the turn is never held up by it.
    """
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        misses.missed(name, seconds)
    except Exception as error:
        # One line: while a service is away every turn's source fails the same way (the
        # outage itself is said once: layers/shared/dependency_health.py).
        log.warning("context source %s failed (%s: %s); left out", name,
                    type(error).__name__, one_line(error))
        log.debug("context source %s failed", name, exc_info=True)
    return None
