"""Which of the services this process stands on are failing right now.

Each client says ``failing`` when a call to its service fails for a reason the service
will get over (unreachable, 5xx, overloaded, disk full) and ``working`` when a call
succeeds again. The registry logs exactly one line when a service starts failing and
one when it is back, however many calls fail in between: a database away for two
minutes is two lines, not a traceback a second. ``/health`` and ``thoth doctor`` read
``failing_now``.

One registry is built per process (``bridge/app.py``) and handed to every client, so two
Thoths built in one test process never see each other's faults.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from layers.shared.one_line import one_line

log = logging.getLogger(__name__)

# The names the clients report under (one word each: they appear in /health's body).
POSTGRES = "postgres"
SQLITE = "sqlite"
MODEL = "model"
SLACK = "slack"
HONCHO = "honcho"
BRAIN_REMOTE = "brain-remote"

# A reason is one line in a log and a health body; a driver's message can be a page.
WHY_MAX_CHARS = 200


@dataclass(frozen=True)
class Failure:
    since: float  # the clock's reading when the service started failing
    why: str  # the first failure's message, redacted and cut to one line


class DependencyHealth:
    """Thread-safe: clients report from the turns' loop, worker threads and Bolt's loop."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failing: dict[str, Failure] = {}
        self._lock = threading.Lock()

    def failing(self, service: str, why: str | BaseException) -> bool:
        """Note that ``service`` is failing; True (and one log line) if it was not already."""
        reason = one_line(why, max_chars=WHY_MAX_CHARS)
        with self._lock:
            if service in self._failing:
                return False
            self._failing[service] = Failure(self._clock(), reason)
        log.warning("%s is failing: %s", service, reason)
        return True

    def working(self, service: str) -> bool:
        """Note that ``service`` answered; True (and one log line) if it had been failing."""
        with self._lock:
            failure = self._failing.pop(service, None)
        if failure is None:
            return False
        log.warning("%s is back after %.1f s", service, self._clock() - failure.since)
        return True

    def is_failing(self, service: str) -> bool:
        with self._lock:
            return service in self._failing

    def failing_now(self) -> dict[str, Failure]:
        with self._lock:
            return dict(self._failing)

    def summary(self) -> str:
        """``ok``, or ``degraded: postgres (3 s: connection refused); model (…)``."""
        now = self._clock()
        failing = self.failing_now()
        if not failing:
            return "ok"
        parts = [f"{service} ({now - failure.since:.0f} s: {failure.why})"
                 for service, failure in sorted(failing.items())]
        return "degraded: " + "; ".join(parts)
