"""Retry a model call with backoff, within a wall-clock budget, only while nothing has
been shown; and share what the API's overload looks like with every other call.

Once text has streamed to the user a retry would repeat it, so a failure after the
first token is final for that call.

The budget (``budget_s``, MODEL_RETRY_BUDGET_S) bounds the time from the call's start
within which a retry may begin: no retry starts that could not be made by then, and the
API's ``retry-after`` is honoured, never cut short (a wait past the budget gives up at
once, as ``ModelAsksToWait``). One attempt's own time is the client's timeout
(MODEL_TIMEOUT_S); ``attempts`` caps the tries as well.

The calls of one process share a ``ModelCircuit`` (``overload.py``): the first call that
fails retries for everyone, the others wait for it within their own budget, and once it
gave up they are refused at once (``ModelOverloaded``) until a probe gets through.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from bridge.model.overload import Entry, ModelCircuit, ModelOverloaded
from bridge.model.protocol import (
    LanguageModel,
    ModelAsksToWait,
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    OnText,
)
from layers.shared.backoff import backoff_delay

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

# The default for MODEL_RETRY_BUDGET_S: long enough for a few tries and a short
# retry-after, short enough that a person is told (and queued) within half a minute.
RETRY_BUDGET_S = 30.0
# How often a call waiting for another's probe looks whether it got through.
WAIT_POLL_S = 0.25


class RetryingModel:
    """Wraps a ``LanguageModel``: retryable failures are tried again, within the budget."""

    def __init__(
        self,
        inner: LanguageModel,
        *,
        attempts: int = 4,
        base_delay_s: float = 1.0,
        max_delay_s: float = 20.0,
        budget_s: float = RETRY_BUDGET_S,
        circuit: ModelCircuit | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self._inner = inner
        self._attempts = attempts
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._budget_s = budget_s
        self._circuit = circuit or ModelCircuit()
        self._sleep = sleep
        self._clock = clock

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def memory_only(self) -> bool:
        return self._inner.memory_only

    @property
    def circuit(self) -> ModelCircuit:
        return self._circuit

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        streamed = False

        async def forward(text: str) -> None:
            nonlocal streamed
            streamed = True
            await on_text(text)

        token = object()  # this call, to the circuit
        deadline = self._clock() + self._budget_s
        attempt = 0
        once = False  # the probe of a circuit that gave up: one request, no retries
        try:
            while True:
                entry = self._circuit.enter(token)
                if entry is Entry.REFUSE:
                    raise ModelOverloaded(self._circuit.why)
                if entry is Entry.WAIT:
                    left = deadline - self._clock()
                    if left <= 0:
                        raise ModelOverloaded(self._circuit.why)
                    await self._sleep(min(WAIT_POLL_S, left))
                    continue
                attempt += 1
                once = entry is Entry.TRY_ONCE
                try:
                    result = await self._inner.respond(request, forward)
                except ModelUnavailable as error:
                    if not error.retryable or streamed:
                        raise
                    self._circuit.failed(token, error)
                    if once:
                        self._circuit.gave_up(token, error.retry_after)
                        raise ModelOverloaded(str(error), error.retry_after) from error
                    await self._after_failure(token, error, attempt, deadline)
                    continue
                self._circuit.succeeded(token)
                return result
        finally:
            self._circuit.left(token)

    async def _after_failure(self, token: object, error: ModelUnavailable, attempt: int,
                             deadline: float) -> None:
        """Wait before the next try, or give up (raising) when it would not fit."""
        left = deadline - self._clock()
        if error.retry_after is not None and error.retry_after > left:
            # The server's wait is honoured, never cut short; past what a call may take,
            # the person is told (and the turn queued) instead of kept waiting.
            self._circuit.gave_up(token, error.retry_after)
            raise ModelAsksToWait(error.retry_after) from error
        delay = self._delay(attempt, error.retry_after)
        if attempt >= self._attempts or delay > left:
            self._circuit.gave_up(token, error.retry_after)
            raise ModelOverloaded(str(error), error.retry_after) from error
        log.info("model call failed (%s); retry %d in %.1fs", error, attempt, delay)
        await self._sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after  # what the server asked for (within the budget, above)
        return backoff_delay(attempt, base_s=self._base_delay_s, max_s=self._max_delay_s)

    async def aclose(self) -> None:
        await self._inner.aclose()
