"""Waiting out a database that is away: tried again until it is back, or the hold ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from bridge.slack.database_away import LONGEST_WAIT_S, HeldInOrder, StillAway, until_back


class Away(Exception):
    pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_a_step_goes_on_once_the_database_is_back(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    tries: list[float] = []

    async def step() -> str:
        tries.append(clock.now)
        if clock.now < 30:
            raise Away("connection refused")
        return "taken"

    with caplog.at_level(logging.INFO, logger="bridge.slack.database_away"):
        taken = asyncio.run(until_back(step, unavailable=(Away,), what="a Slack message",
                                       hold_s=600, sleep=clock.sleep, clock=clock))
    assert taken == "taken"
    # Tried often enough to go on within seconds of the return, never more than 2 s apart.
    assert max(clock.waits) <= LONGEST_WAIT_S
    assert tries[-1] - 30 <= LONGEST_WAIT_S
    said = [record.getMessage() for record in caplog.records]
    assert said[0] == "a Slack message waits for the database"
    assert said[-1].startswith("a Slack message went on after 3")
    assert len(said) == 2  # one line when it starts waiting, one when it goes on


def test_the_hold_ends_with_still_away() -> None:
    clock = Clock()

    async def step() -> None:
        raise Away("connection refused")

    with pytest.raises(StillAway):
        asyncio.run(until_back(step, unavailable=(Away,), what="a Slack message",
                               hold_s=60, sleep=clock.sleep, clock=clock))
    assert 60 <= clock.now <= 60 + LONGEST_WAIT_S


def test_another_failure_is_not_waited_out() -> None:
    clock = Clock()

    async def step() -> None:
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError):
        asyncio.run(until_back(step, unavailable=(Away,), what="a Slack message",
                               hold_s=60, sleep=clock.sleep, clock=clock))
    assert clock.waits == []


def test_deliveries_held_while_away_are_taken_in_the_order_they_came() -> None:
    """Each retrying on its own, the second could reach the inbox first; held in order,
    it never does, and one that comes after the return still waits behind them."""
    away = [True]
    taken: list[str] = []

    async def scenario() -> None:
        held = HeldInOrder((Away,), hold_s=60)

        def step(name: str) -> Callable[[], Awaitable[str]]:
            async def take() -> str:
                await asyncio.sleep(0)
                if away[0]:
                    raise Away("connection refused")
                taken.append(name)
                return name
            return take

        first = asyncio.create_task(held.take(step("first"), "first"))
        await asyncio.sleep(0.01)
        second = asyncio.create_task(held.take(step("second"), "second"))
        await asyncio.sleep(0.3)
        away[0] = False
        third = asyncio.create_task(held.take(step("third"), "third"))
        assert await asyncio.gather(first, second, third) == ["first", "second", "third"]

    asyncio.run(scenario())
    assert taken == ["first", "second", "third"]
