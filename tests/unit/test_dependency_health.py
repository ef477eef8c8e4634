"""The registry of failing services: one log line per change, redacted reasons."""

from __future__ import annotations

import logging

import pytest

from layers.shared.dependency_health import POSTGRES, DependencyHealth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_many_failures_are_one_line_and_the_return_another(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    health = DependencyHealth(clock)
    with caplog.at_level(logging.WARNING, logger="layers.shared.dependency_health"):
        assert health.failing(POSTGRES, ConnectionRefusedError("connection refused"))
        for _ in range(50):
            assert not health.failing(POSTGRES, "connection refused again")
        clock.now += 12.5
        assert health.summary() == "degraded: postgres (12 s: connection refused)"
        assert health.working(POSTGRES)
        assert not health.working(POSTGRES)
    lines = [record.getMessage() for record in caplog.records]
    assert lines == ["postgres is failing: connection refused", "postgres is back after 12.5 s"]
    assert health.summary() == "ok"


def test_a_reason_is_one_redacted_line() -> None:
    health = DependencyHealth()
    secret = "Authorization: Bearer hch-v2-" + "k" * 40
    health.failing("honcho", "401 from honcho\n  " + secret + "\n" + "x" * 500)
    why = health.failing_now()["honcho"].why
    assert "\n" not in why
    assert "k" * 40 not in why
    assert len(why) <= 200


def test_an_exception_without_a_message_is_named() -> None:
    health = DependencyHealth()
    health.failing("model", TimeoutError())
    assert health.failing_now()["model"].why == "TimeoutError"
