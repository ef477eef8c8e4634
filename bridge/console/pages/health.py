"""Health: what `thoth doctor` checks, run when the page is opened (the operator's).

Decided: the checks run on demand, not on every overview: they ask the model and Slack
over the network (the model's one is a few tokens), which no page load should wait for
unasked. The identity backend is named, not asked: its client belongs to the turns' loop
(``run_checks(in_server=True)``). One run at a time; a run's answer is shown for
``FRESH_S`` to whoever opens the page again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bridge.health_checks import Check

FRESH_S = 60.0


class HealthChecks:
    def __init__(self, run: Callable[[], list[Check]], *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._run = run
        self._clock = clock
        self._lock = asyncio.Lock()
        self._last: tuple[float, list[Check]] | None = None

    async def checks(self) -> tuple[list[Check], float]:
        """The checks' findings, and how many seconds ago they were made."""
        async with self._lock:
            if self._last is None or self._clock() - self._last[0] >= FRESH_S:
                self._last = (self._clock(), await asyncio.to_thread(self._run))
            made_at, found = self._last
        return found, self._clock() - made_at
