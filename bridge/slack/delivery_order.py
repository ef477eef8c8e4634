"""Runs the deliveries of the inbox (``inbox.py``) in their lanes' order, keeps this
process's leases alive, and takes over what a dead process left.

A delivery waits until every delivery taken before it in its lane is done, asking the
database (a replica cannot see another's memory); the wait starts short and grows, so
an idle lane costs nothing and a busy one is polled a few times a second at most.

The database away (a restart, a failover: issue 55) loses nothing. A delivery whose turn
met it is run again once it is back, as a delivery taken over is (its turn checks what
was already recorded and said); its lane waits for it meanwhile. A row is marked done
only once that can be written. After an outage every process's leases have run out, so
no row is taken over until each live process has had a whole lease to renew its own.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bridge.slack.database_away import INTAKE_HOLD_S, HeldInOrder, StillAway, until_back
from bridge.slack.inbox import InboxEntry
from bridge.slack.stores import SlackStores
from layers.shared.errors import StorageFull
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

FIRST_POLL_S = 0.01
LONGEST_POLL_S = 0.25

Work = Callable[[], Awaitable[object]]
T = TypeVar("T")


class DeliveryOrder:
    def __init__(self, stores: Offloaded[SlackStores], *, lease_s: float,
                 unavailable: tuple[type[Exception], ...] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``lease_s``: how long the inbox's leases last (renewed a few times in one);
        ``unavailable``: what the database raises while it is away."""
        self._stores = stores
        self._lease_s = lease_s
        self._unavailable = unavailable
        self._clock = clock
        # Until then no row is taken over: the database was away, every lease ran out. A
        # process just started waits one lease too: a live process may not yet have
        # renewed what an outage before this one's start let run out.
        self._no_take_overs_until = clock() + lease_s
        # Deliveries acked while the database is away wait for it in arrival order.
        self.intake = HeldInOrder(unavailable)
        # The rows this process is running, and those done that could not be marked so
        # (a full disk): the leases it renews.
        self._running: set[int] = set()
        self._done_later: dict[int, InboxEntry] = {}

    @property
    def unavailable(self) -> tuple[type[Exception], ...]:
        return self._unavailable

    async def run(self, entry: InboxEntry, work: Work, *, again: Work | None = None,
                  unkept: Work | None = None) -> None:
        """Run ``work`` once ``entry`` is next in its lane, then mark it done.

        ``again``: what runs instead when ``work`` met the database away and it is back
        (the delivery as a process taking it over would run it); ``work`` itself if None.
        ``unkept``: what tells the person when the turn found no room to be stored (a
        full disk): it is not answered, and done (``bridge/pipeline/storage_full.py``).
        Cancelled (a shutdown that could not wait), the entry stays leased to this
        process: when the lease runs out another process, or this one's next start,
        takes it over. Another failure is logged and the entry done: a bug in one
        delivery must not hold up its thread for good.
        """
        self._running.add(entry.id)
        try:
            await self._next_in_lane(entry)
            attempt = work
            while True:
                try:
                    await attempt()
                except StorageFull:
                    log.warning("a Slack %s (lane %s) could not be stored: the disk is full",
                                entry.kind, entry.lane)
                    if unkept is not None:
                        await unkept()
                except self._unavailable:
                    log.warning("a Slack %s (lane %s) met the database away; it runs again"
                                " when the database is back", entry.kind, entry.lane)
                    if not await self._still_ours(entry):
                        return
                    attempt = again or work
                    continue
                except Exception:
                    log.exception("a Slack delivery (%s) failed", entry.kind)
                break
            await self._done(entry)
        finally:
            self._running.discard(entry.id)

    async def _next_in_lane(self, entry: InboxEntry) -> None:
        wait_s = FIRST_POLL_S
        while not await self._held(lambda stores: stores.inbox.is_next(entry),
                                   f"a Slack {entry.kind} (lane {entry.lane})", math.inf):
            await asyncio.sleep(wait_s)
            wait_s = min(wait_s * 2, LONGEST_POLL_S)

    async def _still_ours(self, entry: InboxEntry) -> bool:
        """Once the database is back: whether this process still holds ``entry``."""
        kept = await self._held(lambda stores: stores.inbox.keeps(entry),
                                f"a Slack {entry.kind} (lane {entry.lane})", math.inf)
        if not kept:
            log.info("a Slack %s (lane %s) was taken over by another process while the"
                     " database was away", entry.kind, entry.lane)
        return kept

    async def _done(self, entry: InboxEntry) -> None:
        try:
            await self._held(lambda stores: stores.inbox.done(entry),
                             f"marking a Slack {entry.kind} done", INTAKE_HOLD_S)
        except StillAway:
            # Left leased: once its lease runs out it is taken over, and its turn finds
            # itself recorded already.
            log.error("a Slack %s (lane %s) could not be marked done: the database stayed"
                      " away", entry.kind, entry.lane)
        except StorageFull:
            # Kept leased here, and marked done from ``keep`` once there is room: taken
            # over, it would be answered after its person was told it would not be.
            log.warning("a Slack %s (lane %s) is marked done once the disk has room",
                        entry.kind, entry.lane)
            self._done_later[entry.id] = entry

    async def _held(self, step: Callable[[SlackStores], T], what: str,
                    hold_s: float) -> T:
        return await until_back(lambda: self._stores.run(step),
                                unavailable=self._unavailable, what=what, hold_s=hold_s)

    async def keep(self, take_over: Callable[[InboxEntry], None]) -> None:
        """Forever: renew this process's leases a few times per lease, and hand each row
        whose lease ran out to ``take_over``."""
        away = failing = False
        while True:
            await asyncio.sleep(self._lease_s / 3)
            started = self._clock()
            try:
                await self._mark_done_later()
                running = [*self._running, *self._done_later]
                await self._stores.run(_renew, running)
                if self._clock() - started > self._lease_s / 3:
                    # The database answered only after a round's time: it was away, and
                    # leases (other processes' too) may have run out meanwhile.
                    away = True
                if away:
                    away = False
                    self._no_take_overs_until = self._clock() + self._lease_s
                if self._clock() < self._no_take_overs_until:
                    continue
                orphans = await self._stores.run(lambda stores: stores.inbox.orphans())
            except self._unavailable:
                # The registry of failing services says so once; the next round tries again.
                away = True
                continue
            except Exception:
                # Once for a run of failures (a full disk fails every round).
                if not failing:
                    log.exception("renewing the Slack inbox's leases failed")
                failing = True
                continue
            failing = False
            for entry in orphans:
                log.warning("taking over a Slack %s left by a process that stopped (lane %s)",
                            entry.kind, entry.lane)
                take_over(entry)

    async def _mark_done_later(self) -> None:
        for entry_id, entry in list(self._done_later.items()):
            await self._stores.run(_mark_done, entry)
            del self._done_later[entry_id]


def _renew(stores: SlackStores, running: list[int]) -> int:
    """Renew what this process runs; with nothing to renew, still ask the database
    something, so that an outage is seen before any row is taken over."""
    if running:
        return stores.inbox.renew(running)
    stores.inbox.waiting()
    return 0


def _mark_done(stores: SlackStores, entry: InboxEntry) -> None:
    stores.inbox.done(entry)
