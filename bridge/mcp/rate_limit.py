"""How often one address may knock: a fixed window per address, in this process's memory.

In memory, not in the database: a limit that only slows a flood need not be exact across
replicas (behind a round-robin proxy each replica counts its share), and counting in
the database would make every knock a write. No library for it among Thoth's
dependencies; this is the whole of it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

# Addresses remembered at once: past this, the oldest window goes first (a flood from
# many addresses costs each of them a fresh window, never this process's memory).
MAX_ADDRESSES = 10_000


class PerAddress:
    """At most ``limit`` knocks per address in each ``window_s`` (the window starts at an
    address's first knock)."""

    def __init__(self, limit: int, window_s: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError("a rate limit needs a limit of 1 or more and a window over 0 s")
        self._limit = limit
        self._window_s = window_s
        self._clock = clock
        # address -> (window start, knocks in it); in order of window start, so lapsed
        # windows are at the front.
        self._windows: dict[str, tuple[float, int]] = {}

    def knock(self, address: str) -> int:
        """0 if ``address`` may go on (the knock counted), else the seconds until it may."""
        now = self._clock()
        self._forget_lapsed(now)
        start, knocks = self._windows.get(address, (now, 0))
        if knocks >= self._limit:
            return max(1, math.ceil(start + self._window_s - now))
        if knocks == 0:
            self._windows.pop(address, None)
            while len(self._windows) >= MAX_ADDRESSES:
                del self._windows[next(iter(self._windows))]
        self._windows[address] = (start, knocks + 1)
        return 0

    def _forget_lapsed(self, now: float) -> None:
        while self._windows:
            address = next(iter(self._windows))
            if self._windows[address][0] + self._window_s > now:
                return
            del self._windows[address]
