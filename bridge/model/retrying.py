"""Retry a model call with exponential backoff, only while nothing has been shown.

Once text has streamed to the user a retry would repeat it, so a failure after
the first token is final for that call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

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


class RetryingModel:
    """Wraps a ``LanguageModel``: up to ``attempts`` tries for retryable failures."""

    def __init__(
        self,
        inner: LanguageModel,
        *,
        attempts: int = 4,
        base_delay_s: float = 1.0,
        max_delay_s: float = 20.0,
        max_wait_s: float = 60.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self._inner = inner
        self._attempts = attempts
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._max_wait_s = max_wait_s
        self._sleep = sleep

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def memory_only(self) -> bool:
        return self._inner.memory_only

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        streamed = False

        async def forward(text: str) -> None:
            nonlocal streamed
            streamed = True
            await on_text(text)

        for attempt in range(1, self._attempts + 1):
            try:
                return await self._inner.respond(request, forward)
            except ModelUnavailable as error:
                if not error.retryable or streamed or attempt == self._attempts:
                    raise
                if error.retry_after is not None and error.retry_after > self._max_wait_s:
                    # The server's wait is honoured, never cut short; past what a turn may
                    # take, the person is told instead of kept waiting.
                    raise ModelAsksToWait(error.retry_after) from error
                delay = self._delay(attempt, error.retry_after)
                log.warning(
                    "model call failed (%s); retry %d of %d in %.1fs",
                    error,
                    attempt,
                    self._attempts - 1,
                    delay,
                )
                await self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after  # what the server asked for (at most max_wait_s, above)
        return backoff_delay(attempt, base_s=self._base_delay_s, max_s=self._max_delay_s)

    async def aclose(self) -> None:
        await self._inner.aclose()
