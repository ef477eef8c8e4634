"""Whether the identity backend can be reached, as far as this process knows.

A remote backend (Honcho) reports every call here: a failure the service will get over
(unreachable, a reset, a timeout, 5xx, 429) marks it failing in the process's
``DependencyHealth`` (one log line), the next success marks it working (one line).
While it is known to be failing:

- the user model does not wait for it: at most one turn per ``probe_every_s`` tries (its
  answer is the probe), the others go on without it at once;
- the senders of the identity outbox stop and probe it every ``probe_every_s`` with one
  cheap read, and send again as soon as a probe answers, so what waited is on its way
  within seconds of the service's return rather than after a backoff grown during the
  outage. A failed send does not count against the turn while the service is away: the
  turn did nothing wrong.

- a watcher on the loop that saw the failure probes it every ``probe_every_s`` that no
  call or sender did, so a process that stops calling (no turns, or a replica whose
  worker sends the outbox) still says it is back, and ``/health`` does not stay degraded.

The probe is what tells "the service is away" (every turn would fail) from "this turn
failed" (the service answers a read): only the second is the turn's own failure, retried
with backoff and at last set aside.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from layers.shared.dependency_health import DependencyHealth

log = logging.getLogger(__name__)

# How often a service known to be away is asked again. The issue's target is "back within
# 10 s of its return"; a probe is one small read, so a few seconds cost nothing.
PROBE_EVERY_S = 2.0

Probe = Callable[[], Awaitable[None]]  # raises when the service cannot be reached
Sleep = Callable[[float], Awaitable[None]]


class Availability:
    def __init__(
        self,
        service: str,
        health: DependencyHealth,
        probe: Probe,
        *,
        probe_every_s: float = PROBE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.service = service
        self.health = health
        self.probe_every_s = probe_every_s
        self._probe = probe
        self._clock = clock
        self._sleep = sleep
        # When the service was last asked anything (a call or a probe) while away.
        self._last_try = float("-inf")
        self._watching: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        return self.health.is_failing(self.service)

    def failed(self, why: str | BaseException) -> None:
        """A call failed for a reason the service will get over."""
        self._last_try = self._clock()
        self.health.failing(self.service, why)
        self._watch()

    def _watch(self) -> None:
        """Probe in the background until the service is back (one watcher at a time; one
        on each loop that meets the failure: asyncio.run cancels it with its loop)."""
        if self._watching is not None and not self._watching.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # called off any loop: the next call on one watches
        self._watching = loop.create_task(self._watched())

    async def _watched(self) -> None:
        while self.down:
            await self._sleep(self.probe_every_s)
            # A call or a sender may have asked meanwhile: one probe an interval in all.
            if self.down and self._clock() - self._last_try >= self.probe_every_s:
                await self.probe()

    def worked(self) -> None:
        self.health.working(self.service)

    def may_try(self) -> bool:
        """Whether a call may go to the service now: always while it works; while it is
        away, one call per ``probe_every_s`` (that call is the probe), claimed here so
        concurrent turns do not all wait on a dead service."""
        if not self.down:
            return True
        now = self._clock()
        if now - self._last_try < self.probe_every_s:
            return False
        self._last_try = now
        return True

    async def probe(self) -> bool:
        """Ask the service once; True (and marked working) when it answered."""
        self._last_try = self._clock()
        try:
            await self._probe()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.failed(error)
            return False
        self.worked()
        return True

    async def probe_when_due(self) -> bool:
        """For a sender's round while the service is away: probe if the last try is
        ``probe_every_s`` old; True when the service works (or just answered)."""
        if not self.down:
            return True
        if self._clock() - self._last_try < self.probe_every_s:
            return False
        return await self.probe()

    async def wait_until_up(self) -> bool:
        """After a failed send: probe at once, and while the service does not answer,
        every ``probe_every_s``. Returns True if it was away (the failure was the
        service's, not the turn's), False if it answered the first probe."""
        waited = False
        while not await self.probe():
            waited = True
            await self._sleep(self.probe_every_s)
        return waited


@runtime_checkable
class Watched(Protocol):
    """A backend whose calls are watched (``HonchoIdentity``); the local backend is not:
    it is the process's own database, whose failures are the database's."""

    availability: Availability


def availability_of(backend: object) -> Availability | None:
    return backend.availability if isinstance(backend, Watched) else None
