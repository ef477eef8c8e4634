"""RetryingModel: retries what may succeed, never repeats text already shown."""

from __future__ import annotations

import asyncio
import time

import pytest

from bridge.model.overload import ModelCircuit, ModelOverloaded
from bridge.model.protocol import ModelRequest, ModelUnavailable, Said
from bridge.model.retrying import RetryingModel
from layers.shared.dependency_health import MODEL, DependencyHealth
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


def test_a_burst_spends_one_call_s_retries_not_one_each() -> None:
    """The first failure opens the circuit and that call retries for everyone; the others
    wait for it (within their own budget), then are refused as overloaded."""
    busy = ModelUnavailable("529", retryable=True)
    inner = ScriptedModel(*[busy] * 40)
    health = DependencyHealth()
    model = RetryingModel(inner, attempts=4, base_delay_s=0.02, budget_s=0.5,
                          circuit=ModelCircuit(probe_every_s=60, health=health))

    async def burst() -> list[BaseException | None]:
        async def one() -> BaseException | None:
            try:
                await model.respond(REQUEST, _ignore)
            except ModelUnavailable as error:
                return error
            return None

        return await asyncio.gather(*(one() for _ in range(10)))

    failures = asyncio.run(burst())
    assert all(isinstance(error, ModelUnavailable) and error.retryable for error in failures)
    # The ten started together, so each sent its first request before the circuit opened;
    # after that only the probe retried: ten plus three, not ten times four.
    assert len(inner.requests) <= 10 + 3
    assert health.is_failing(MODEL)
    # Given up, and no probe due for a minute: the next call is refused without a request.
    sent = len(inner.requests)
    with pytest.raises(ModelOverloaded):
        _run(model)
    assert len(inner.requests) == sent


def test_once_given_up_one_probe_goes_through_and_closes_the_circuit() -> None:
    busy = ModelUnavailable("529", retryable=True)
    inner = ScriptedModel(busy, busy, "back")
    health = DependencyHealth()
    model = RetryingModel(inner, attempts=1, budget_s=1.0,
                          circuit=ModelCircuit(probe_every_s=0.05, health=health))
    with pytest.raises(ModelOverloaded):
        _run(model)
    with pytest.raises(ModelOverloaded):
        _run(model)  # refused: the probe is not due
    assert len(inner.requests) == 1
    time.sleep(0.06)
    with pytest.raises(ModelOverloaded):
        _run(model)  # the probe: one request, failed, given up again at once
    assert len(inner.requests) == 2 and health.is_failing(MODEL)
    time.sleep(0.06)
    assert _run(model)[0] == "back"
    assert not model.circuit.is_open and not health.is_failing(MODEL)


def test_retries_stop_at_the_budget_whatever_the_attempts() -> None:
    busy = ModelUnavailable("529", retryable=True)
    inner = ScriptedModel(*[busy] * 10)
    model = RetryingModel(inner, attempts=10, base_delay_s=0.2, max_delay_s=0.2,
                          budget_s=0.35)
    with pytest.raises(ModelOverloaded):
        _run(model)
    # Waits of 0.1 to 0.2 s: at most four tries fit in 0.35 s, not the ten allowed.
    assert 2 <= len(inner.requests) <= 4


async def _ignore(text: str) -> None:
    return None


def test_a_probe_that_left_without_a_word_lets_the_next_one_go() -> None:
    """The probing call was cancelled (Stop, a shutdown): a queue with no live turns must
    still get its probe once one is due, or it would wait for ever."""
    now = [0.0]
    circuit = ModelCircuit(probe_every_s=5, clock=lambda: now[0])
    prober = object()
    circuit.failed(prober, ModelUnavailable("529", retryable=True))
    assert circuit.readiness() == "wait"  # the prober still retries
    circuit.left(prober)
    assert circuit.readiness() == "probe"
    queued = object()
    assert circuit.enter(queued).name in ("PROBE", "TRY_ONCE")
    assert circuit.readiness() == "wait"  # one probe at a time
    circuit.succeeded(queued)
    assert circuit.readiness() == "go"
