"""RetryingModel: retries what may succeed, never repeats text already shown."""

from __future__ import annotations

import asyncio

import pytest

from bridge.model.protocol import ModelRequest, ModelUnavailable, Said
from bridge.model.retrying import RetryingModel
from tests.fakes import ScriptedModel

REQUEST = ModelRequest(model="m", system=(), messages=(Said("user", "hi"),))


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def _run(model: RetryingModel) -> tuple[str, list[str]]:
    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    result = asyncio.run(model.respond(REQUEST, on_text))
    return result.text, shown


def test_retryable_failures_are_retried_with_growing_backoff() -> None:
    busy = ModelUnavailable("529", retryable=True)
    inner = ScriptedModel(busy, busy, busy, "answer")
    sleeps = Sleeps()
    text, shown = _run(RetryingModel(inner, attempts=4, base_delay_s=1.0, sleep=sleeps))
    assert text == "answer" and shown == ["answer"]
    assert len(inner.requests) == 4
    assert len(sleeps.delays) == 3
    # Full jitter within [b/2, b] for b = 1, 2, 4.
    for delay, base in zip(sleeps.delays, (1.0, 2.0, 4.0), strict=True):
        assert base / 2 <= delay <= base


def test_retry_after_from_the_server_is_honoured() -> None:
    inner = ScriptedModel(ModelUnavailable("429", retryable=True, retry_after=7.0), "ok")
    sleeps = Sleeps()
    _run(RetryingModel(inner, sleep=sleeps))
    assert sleeps.delays == [7.0]


def test_the_last_failure_is_raised() -> None:
    busy = ModelUnavailable("529", retryable=True)
    inner = ScriptedModel(busy, busy)
    with pytest.raises(ModelUnavailable):
        _run(RetryingModel(inner, attempts=2, sleep=Sleeps()))
    assert len(inner.requests) == 2


def test_a_client_error_is_not_retried() -> None:
    inner = ScriptedModel(ModelUnavailable("400", retryable=False), "never")
    with pytest.raises(ModelUnavailable):
        _run(RetryingModel(inner, sleep=Sleeps()))
    assert len(inner.requests) == 1


def test_no_retry_once_text_was_shown() -> None:
    inner = ScriptedModel((["Half an ans"], ModelUnavailable("overloaded", retryable=True)), "x")
    with pytest.raises(ModelUnavailable):
        _run(RetryingModel(inner, sleep=Sleeps()))
    assert len(inner.requests) == 1
