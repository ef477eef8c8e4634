"""Runs the deliveries of the inbox (``inbox.py``) in their lanes' order, keeps this
process's leases alive, and takes over what a dead process left.

A delivery waits until every delivery taken before it in its lane is done, asking the
database (a replica cannot see another's memory); the wait starts short and grows, so
an idle lane costs nothing and a busy one is polled a few times a second at most.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bridge.slack.inbox import InboxEntry
from bridge.slack.stores import SlackStores
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

FIRST_POLL_S = 0.01
LONGEST_POLL_S = 0.25

Work = Callable[[], Awaitable[object]]


class DeliveryOrder:
    def __init__(self, stores: Offloaded[SlackStores], *, lease_s: float) -> None:
        """``lease_s``: how long the inbox's leases last (renewed a few times in one)."""
        self._stores = stores
        self._lease_s = lease_s

    async def run(self, entry: InboxEntry, work: Work) -> None:
        """Run ``work`` once ``entry`` is next in its lane, then mark it done.

        Cancelled (a shutdown that could not wait), the entry stays leased to this
        process: when the lease runs out another process, or this one's next start,
        takes it over. A failure is logged and the entry done: a bug in one delivery
        must not hold up its thread for good.
        """
        await self._next_in_lane(entry)
        try:
            await work()
        except Exception:
            log.exception("a Slack delivery (%s) failed", entry.kind)
        await self._stores.run(lambda stores: stores.inbox.done(entry))

    async def _next_in_lane(self, entry: InboxEntry) -> None:
        wait_s = FIRST_POLL_S
        while not await self._stores.run(lambda stores: stores.inbox.is_next(entry)):
            await asyncio.sleep(wait_s)
            wait_s = min(wait_s * 2, LONGEST_POLL_S)

    async def keep(self, take_over: Callable[[InboxEntry], None]) -> None:
        """Forever: renew this process's leases a few times per lease, and hand each row
        whose lease ran out to ``take_over``."""
        while True:
            await asyncio.sleep(self._lease_s / 3)
            try:
                await self._stores.run(lambda stores: stores.inbox.renew())
                orphans = await self._stores.run(lambda stores: stores.inbox.orphans())
            except Exception:
                # The database is away: the next round tries again (leases outlive a few).
                log.exception("renewing the Slack inbox's leases failed")
                continue
            for entry in orphans:
                log.warning("taking over a Slack %s left by a process that stopped (lane %s)",
                            entry.kind, entry.lane)
                take_over(entry)
