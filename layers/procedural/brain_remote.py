"""Whether the brain's git remote (``BRAIN_REMOTE``) answers, as this process last saw it.

A remote that hangs costs each fetch or push its whole timeout, and the brain's writers
call both while holding the lock every replica's writers wait on. So once a fetch or push
has failed, the remote is *known down*: writers commit locally and never wait on it (an
approval then costs what a local commit costs), and only a probe, at most every
``probe_every_s`` and never under the writers' lock, tries it again
(``Brain.push_pending``: from the follower's step, every 2 s in ``thoth serve`` and
``thoth worker``, and from a thread a writer starts when a probe is due, for processes
without a follower). The first success marks it answering again and the commits kept
meanwhile are pushed.

Processes sharing the remote share what they found through the database
(``brain_remote_down``, written by ``BrainPeers``): a writer that takes the writers' lock
after another replica found the remote down skips it at once, so an outage costs one
timeout in all, not one per replica. Each process still probes for itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from layers.shared.dependency_health import BRAIN_REMOTE, DependencyHealth

# BRAIN_REMOTE_TIMEOUT_S's default: a fetch or push of a few commits takes well under a
# second; ten is room for a slow link, and what the first write pays when the remote hangs.
REMOTE_TIMEOUT_S = 10.0
# How often a known-down remote is tried again.
PROBE_EVERY_S = 5.0


class RemoteWatch:
    """Thread-safe: the follower's thread and the turns' writers share it."""

    def __init__(
        self,
        remote: str,
        *,
        health: DependencyHealth | None = None,
        probe_every_s: float = PROBE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shown = shown_remote(remote)
        # A registry of its own when none is given: the one-line-per-change log stays.
        self._health = health if health is not None else DependencyHealth()
        self._probe_every_s = probe_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._down = False
        self._next_probe = 0.0

    def is_down(self) -> bool:
        with self._lock:
            return self._down

    def probe_due(self) -> bool:
        with self._lock:
            return self._down and self._clock() >= self._next_probe

    def claim_probe(self) -> bool:
        """Answering, or down with a probe due, which this claims: another caller asking
        at once is told no, so one probe runs at a time."""
        with self._lock:
            if not self._down:
                return True
            now = self._clock()
            if now < self._next_probe:
                return False
            self._next_probe = now + self._probe_every_s
            return True

    def failed(self, why: str) -> bool:
        """A fetch, push or probe failed (``why``: which, and how): known down until a
        probe answers; True if it was not known down before."""
        with self._lock:
            was_down, self._down = self._down, True
            self._next_probe = self._clock() + self._probe_every_s
        # One line when it starts failing (the registry's), none for each probe after.
        self._health.failing(BRAIN_REMOTE, f"commits kept here; {why}")
        return not was_down

    def answered(self) -> bool:
        """A call answered; True if it was known down until now."""
        with self._lock:
            was_down, self._down = self._down, False
        self._health.working(BRAIN_REMOTE)
        return was_down


def shown_remote(remote: str) -> str:
    """The remote as a log line may show it: a URL's user and password left out."""
    parts = urlsplit(remote)
    if not parts.netloc or "@" not in parts.netloc:
        return remote
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
