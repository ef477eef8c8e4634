"""Whether Slack is failing, as the calls of one client find it, told to the process's
registry of failing services (``layers/shared/dependency_health.py``) as one service.

Slack fails by part as often as whole: posts answered 503 while reads still answer, or
one post in three failing. So Slack is "working" again only when, for each kind of call
that failed (one that makes a message: a post or a stream's call; an edit; a read;
anything else: a status, a reaction), a call of that kind has answered and none has
failed for ``QUIET_S``. Without that, replies retrying their posts between reads of the
thread, or between each other's successes, would log "failing" and "back" on every try
(one line per change is the registry's rule, so the changes must be real ones). The
check is made again ``QUIET_S`` after such an answer, so a Slack that is back says so
even when nothing more is sent. A kind that failed and is not called again for
``STALE_S`` does not keep /health degraded either, once any other call answers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from bridge.slack_api.makes_something import MAKES_SOMETHING
from layers.shared.dependency_health import SLACK, DependencyHealth

# Reading methods; edits; the rest make something, or are "other".
READ_PREFIXES = ("conversations.", "users.", "auth.", "team.", "bots.", "emoji.",
                 "files.info", "chat.getPermalink", "openid.")
EDITS = frozenset({"chat.update", "chat.delete"})
# How long a kind of call must go without failing, once one has answered, before Slack
# counts as back for it.
QUIET_S = 5.0
STALE_S = 60.0


class SlackHealth:
    def __init__(self, health: DependencyHealth, *, quiet_s: float = QUIET_S,
                 stale_s: float = STALE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._health = health
        self._quiet_s = quiet_s
        self._stale_s = stale_s
        self._clock = clock
        self._failed: dict[str, float] = {}  # a kind of call -> when it last failed
        self._answered: set[str] = set()  # failed kinds that have answered since
        self._check_at = 0.0  # when a check already waits to be made
        self._lock = threading.Lock()

    def failed(self, method: str, why: str) -> None:
        with self._lock:
            kind = _kind(method)
            self._failed[kind] = self._clock()
            self._answered.discard(kind)  # it must answer again, after this failure
        self._health.failing(SLACK, why)

    def answered(self, method: str) -> None:
        with self._lock:
            kind = _kind(method)
            if kind in self._failed:
                self._answered.add(kind)
        self._settle()

    def _settle(self) -> None:
        """Say Slack is back if it is; else, once a kind has answered, look again when it
        will have been quiet long enough (a Slack that is back says so unasked)."""
        now = self._clock()
        with self._lock:
            for kind, at in list(self._failed.items()):
                quiet = now - at >= self._quiet_s
                if (kind in self._answered and quiet) or now - at > self._stale_s:
                    del self._failed[kind]
                    self._answered.discard(kind)
            recovered = not self._failed
            waits = [at + self._quiet_s - now for kind, at in self._failed.items()
                     if kind in self._answered]
            wait = max(0.0, min(waits)) if waits else None
            look_again = wait is not None and not (now < self._check_at <= now + wait)
            if look_again and wait is not None:
                self._check_at = now + wait
        if recovered:
            self._health.working(SLACK)
        elif look_again and wait is not None:
            _later(wait + 0.01, self._settle)


def _later(seconds: float, check: Callable[[], object]) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop (a sync caller): the next call checks
    loop.call_later(seconds, check)


def _kind(method: str) -> str:
    if method in MAKES_SOMETHING:
        return "post"
    if method in EDITS:
        return "edit"
    return "read" if method.startswith(READ_PREFIXES) else "other"
