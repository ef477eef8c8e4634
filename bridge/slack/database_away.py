"""Waiting out a database that is away (a restart during a deploy, a failover) without
losing what Slack was told we have.

Slack is acked before anything is stored (``process_before_response=False``), so once a
delivery is acked only this process holds it until the inbox has it. A step that meets
the database away is tried again, often enough that it goes on within a couple of
seconds of the database's return, for as long as the caller allows. The registry of
failing services (``layers/shared/dependency_health.py``) logs the outage itself; each
held step says once that it waits.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from layers.shared.backoff import backoff_delay

log = logging.getLogger(__name__)

T = TypeVar("T")

# The longest wait between two tries: the target is to go on within 10 s of the
# database's return, and the pool itself takes a few seconds to connect again.
LONGEST_WAIT_S = 2.0
FIRST_WAIT_S = 0.25
# A delivery acked while the database is away is held this long, in memory, before the
# person is told it could not be kept (Slack will not send it again: it was acked).
INTAKE_HOLD_S = 600.0

Sleep = Callable[[float], Awaitable[None]]


class StillAway(Exception):
    """The database was still away when the caller's hold ran out."""


async def until_back(
    step: Callable[[], Awaitable[T]],
    *,
    unavailable: tuple[type[Exception], ...],
    what: str,
    hold_s: float,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``step()``'s result, trying again while it raises one of ``unavailable``; raises
    ``StillAway`` once ``hold_s`` has passed without the database."""
    started = clock()
    attempt = 0
    while True:
        try:
            result = await step()
        except unavailable as error:
            attempt += 1
            if attempt == 1:
                log.info("%s waits for the database", what)
            if clock() - started >= hold_s:
                raise StillAway(what) from error
            await sleep(backoff_delay(attempt, base_s=FIRST_WAIT_S, max_s=LONGEST_WAIT_S))
            continue
        if attempt:
            log.info("%s went on after %.1f s without the database", what, clock() - started)
        return result


class HeldInOrder:
    """Deliveries acked while the database is away, taken in as they came.

    Each retrying on its own, the one that came second could reach the inbox first once
    the database is back, and be answered first. So once one waits, every later one
    queues behind it (a lock's waiters are woken in order) and only the head tries; with
    none waiting a delivery goes straight in, as it always did. Each delivery's hold is
    counted from when it came, not from when it reached the head of the queue.
    """

    def __init__(self, unavailable: tuple[type[Exception], ...], *,
                 hold_s: float = INTAKE_HOLD_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._unavailable = unavailable
        self._hold_s = hold_s
        self._clock = clock
        self._queue = asyncio.Lock()
        # Deliveries queued or at the head: counted here, since a released lock reads as
        # free before its next waiter has run (one arriving then would jump the queue).
        self._held = 0

    async def take(self, step: Callable[[], Awaitable[T]], what: str) -> T:
        """``step()``'s result, in arrival order while the database is away; raises
        ``StillAway`` once the hold has run out."""
        came = self._clock()
        if not self._held:
            try:
                return await step()
            except self._unavailable:
                pass  # into the queue, behind any that failed before it
        self._held += 1
        try:
            async with self._queue:
                return await until_back(
                    step, unavailable=self._unavailable, what=what,
                    hold_s=self._hold_s - (self._clock() - came), clock=self._clock)
        finally:
            self._held -= 1
