"""A context source that keeps missing its deadline is said once, then only tenfold."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bridge.pipeline.deadlines import MissedDeadlines, within_deadline


def test_a_missed_deadline_is_logged_once_then_at_tenfold_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    misses = MissedDeadlines()

    async def slow() -> str:
        await asyncio.sleep(1)
        return "late"

    async def turns() -> list[str | None]:
        return [await within_deadline("user-model", 0.001, slow(), misses) for _ in range(12)]

    with caplog.at_level(logging.WARNING, logger="bridge.pipeline.deadlines"):
        assert asyncio.run(turns()) == [None] * 12
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2
    assert "missed its 0.00s deadline" in said[0] and "10 times" in said[1]
