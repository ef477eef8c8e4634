"""Turns' slots shared fairly between people: one person's burst never holds another's.

At most ``limit`` turns run at once. When one ends, its slot goes to the waiting person
with the fewest turns running (ties: whoever has waited longest), not to the oldest
waiting turn: forty-eight threads from one person queue behind each other, and a
colleague's one question takes the next free slot.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class FairSlots:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("at least one slot")
        self._limit = limit
        self._running: Counter[str] = Counter()
        self._waiting: dict[str, deque[tuple[int, asyncio.Future[None]]]] = {}
        self._order = itertools.count()

    @property
    def running(self) -> int:
        return sum(self._running.values())

    @asynccontextmanager
    async def hold(self, who: str) -> AsyncIterator[None]:
        """A slot for one of ``who``'s turns, held while the block runs."""
        if self.running < self._limit and not self._waiting:
            self._running[who] += 1
        else:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.setdefault(who, deque()).append((next(self._order), granted))
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._release(who)  # granted just as it was cancelled: give it on
                else:
                    self._forget(who, granted)
                raise
        try:
            yield
        finally:
            self._release(who)

    def _release(self, who: str) -> None:
        self._running[who] -= 1
        if self._running[who] <= 0:
            del self._running[who]
        self._grant()

    def _grant(self) -> None:
        while self.running < self._limit and self._waiting:
            who = min(self._waiting, key=lambda w: (self._running[w], self._waiting[w][0][0]))
            _, granted = self._waiting[who].popleft()
            if not self._waiting[who]:
                del self._waiting[who]
            if granted.done():
                continue  # cancelled while it waited: its task forgets it when it runs
            self._running[who] += 1
            granted.set_result(None)

    def _forget(self, who: str, granted: asyncio.Future[None]) -> None:
        queue = self._waiting.get(who)
        if queue is None:
            return
        kept = deque(entry for entry in queue if entry[1] is not granted)
        if kept:
            self._waiting[who] = kept
        else:
            del self._waiting[who]
