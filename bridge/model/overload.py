"""Whether the model's API is overloaded right now, shared by every call of the process.

A burst of turns against an overloaded API must not each spend a full round of retries
on it: fifty turns times four tries is two hundred requests to a service that is asking
for less. So the calls of one process share one circuit (``ModelCircuit``):

- Closed: every call goes.
- The first call that fails for a reason that may pass (529, 5xx, 429, a reset, a
  timeout) opens it and becomes its *probe*: it alone goes on retrying, with backoff and
  within its budget (``RetryingModel``). A call that arrives meanwhile, or that failed
  too, *waits* for the probe (never past its own budget) instead of sending requests of
  its own.
- The probe gets an answer: the circuit closes, the waiting calls go, ``health`` says the
  model works again. The probe runs out of budget: the circuit *gives up*, and from then
  on a call is refused at once (``ModelOverloaded``; the turn is queued to be answered
  later, ``bridge/pipeline/answer_later.py``) except one probe every ``probe_every_s``
  (longer when the API's ``retry-after`` said so), which is whichever call comes first:
  a new turn, or the queue's job trying a waiting one. That probe is one request: failed,
  the circuit stays given up until the next one is due.

Decided: the circuit is per process, not shared across replicas through the database.
Each replica learns of the overload from its own first failure (one call's budget), and
probes on its own (one request per ``probe_every_s`` per replica): a few requests, against
a shared state that would itself need the database on every model call.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

from bridge.model.protocol import ModelUnavailable
from layers.shared.dependency_health import MODEL, DependencyHealth

# How often, once a probe gave up, one call is let through to see whether the API is back.
PROBE_EVERY_S = 5.0


class ModelOverloaded(ModelUnavailable):
    """The model's API is overloaded and this call was not tried (or gave up trying):
    retryable, later. ``retry_after``: when the API said to come back, if it did."""

    def __init__(self, why: str, retry_after: float | None = None) -> None:
        super().__init__(f"the model is overloaded ({why})", retryable=True,
                         retry_after=retry_after)


class Entry(enum.Enum):
    GO = "go"  # closed: call
    PROBE = "probe"  # open, and this call is the one that tries (within its budget)
    TRY_ONCE = "try once"  # open and given up: this call is the probe, one request
    WAIT = "wait"  # open, another call is trying: wait for it
    REFUSE = "refuse"  # open, given up, no probe due: do not call


class ModelCircuit:
    """Thread-safe (turns, image descriptions and routines may run on different loops);
    a call is named by any object of its own (``token``)."""

    def __init__(self, *, probe_every_s: float = PROBE_EVERY_S,
                 health: DependencyHealth | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._probe_every_s = probe_every_s
        self._health = health
        self._clock = clock
        self._lock = threading.Lock()
        self._open = False
        self._given_up = False
        self._prober: object | None = None
        self._next_probe_at = 0.0
        self._why = ""

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open

    def enter(self, token: object) -> Entry:
        """What the call ``token`` may do now."""
        with self._lock:
            if not self._open:
                return Entry.GO
            if self._prober is token:
                return Entry.PROBE
            if self._prober is None and self._clock() >= self._next_probe_at:
                self._prober = token
                return Entry.TRY_ONCE if self._given_up else Entry.PROBE
            return Entry.REFUSE if self._given_up else Entry.WAIT

    def failed(self, token: object, error: ModelUnavailable) -> None:
        """A call failed for a reason that may pass: the first such failure opens the
        circuit, that call becoming its probe."""
        with self._lock:
            opened = not self._open
            if opened:
                self._open, self._given_up, self._why = True, False, str(error)
            if self._prober is None:
                self._prober = token
        if opened and self._health is not None:
            self._health.failing(MODEL, str(error))

    def gave_up(self, token: object, retry_after: float | None) -> None:
        """The call ``token`` stops trying: calls are refused until the next probe is due
        (no sooner than the API's ``retry_after``)."""
        with self._lock:
            if not self._open:
                return
            self._given_up = True
            if self._prober is token:
                self._prober = None
            self._next_probe_at = self._clock() + max(self._probe_every_s, retry_after or 0.0)

    def left(self, token: object) -> None:
        """The call ended without saying anything about the API (cancelled, refused for
        its own request): a probe it held goes to the next call."""
        with self._lock:
            if self._prober is token:
                self._prober = None

    def succeeded(self, token: object) -> None:
        with self._lock:
            was_open = self._open
            self._open, self._given_up, self._prober = False, False, None
        if was_open and self._health is not None:
            self._health.working(MODEL)

    def readiness(self) -> str:
        """For a queue of calls: "go" (closed), "probe" (one call may try now), "wait"."""
        with self._lock:
            if not self._open:
                return "go"
            # With no call probing (the last one gave up, or left without a word on the
            # API: cancelled, stopped, refused for its own request), a due probe may go:
            # else a process with no live turns (a worker) would wait for ever.
            due = self._prober is None and self._clock() >= self._next_probe_at
            return "probe" if due else "wait"

    @property
    def why(self) -> str:
        with self._lock:
            return self._why
