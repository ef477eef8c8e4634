"""Turns' slots between people: a burst from one never holds another's question."""

from __future__ import annotations

import asyncio

from bridge.slack.fair_slots import FairSlots


def test_a_colleagues_one_question_takes_the_next_free_slot_before_a_burst() -> None:
    started: list[str] = []

    async def run() -> None:
        slots = FairSlots(2)
        release = asyncio.Event()

        async def turn(name: str) -> None:
            async with slots.hold(name[0]):
                started.append(name)
                await release.wait()

        burst = [asyncio.create_task(turn(f"a{n}")) for n in range(6)]
        await asyncio.sleep(0)
        late = asyncio.create_task(turn("b0"))
        await asyncio.sleep(0)
        assert started == ["a0", "a1"]
        release.set()
        await asyncio.gather(*burst, late)

    asyncio.run(run())
    # The colleague's question went third, not seventh.
    assert started[:3] == ["a0", "a1", "b0"] and len(started) == 7


def test_a_cancelled_waiter_gives_its_place_up() -> None:
    async def run() -> int:
        slots = FairSlots(1)
        hold = asyncio.Event()

        async def turn(name: str) -> None:
            async with slots.hold(name):
                await hold.wait()

        first = asyncio.create_task(turn("a"))
        waiting = asyncio.create_task(turn("b"))
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.sleep(0)
        hold.set()
        await first
        async with slots.hold("c"):
            return slots.running

    assert asyncio.run(run()) == 1


def test_a_slot_freed_just_as_a_waiter_is_cancelled_is_not_lost() -> None:
    async def run() -> int:
        slots = FairSlots(1)
        release = asyncio.Event()

        async def turn(name: str) -> None:
            async with slots.hold(name):
                await release.wait()

        first = asyncio.create_task(turn("a"))
        await asyncio.sleep(0)
        waiting = asyncio.create_task(turn("b"))
        await asyncio.sleep(0)
        waiting.cancel()  # its future is cancelled now; its task runs later
        release.set()
        await first  # releases while the cancelled waiter is still queued
        await asyncio.gather(waiting, return_exceptions=True)
        async with slots.hold("c"):
            return slots.running

    assert asyncio.run(run()) == 1
