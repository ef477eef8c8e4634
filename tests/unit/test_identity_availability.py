"""How the identity backend's availability gates calls while it is away."""

from __future__ import annotations

import asyncio

from layers.identity.availability import Availability, availability_of
from layers.shared.dependency_health import HONCHO, DependencyHealth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Service:
    """A probe target that answers once ``up``."""

    def __init__(self) -> None:
        self.up = False
        self.asked = 0

    async def probe(self) -> None:
        self.asked += 1
        if not self.up:
            raise ConnectionRefusedError("connection refused")


def _availability(clock: Clock, service: Service) -> Availability:
    async def no_wait(seconds: float) -> None:
        clock.now += seconds
        await asyncio.sleep(0)  # let the others run, as a real wait would

    return Availability(HONCHO, DependencyHealth(clock), service.probe, probe_every_s=2.0,
                        clock=clock, sleep=no_wait)


def test_while_away_one_call_in_each_probe_interval_may_try() -> None:
    clock, service = Clock(), Service()
    availability = _availability(clock, service)
    assert availability.may_try()  # works: every call goes
    availability.failed("ConnectionError")
    assert availability.down
    assert [availability.may_try() for _ in range(3)] == [False, False, False]
    clock.now += 2.0
    assert availability.may_try()  # this one is the probe
    assert not availability.may_try()  # and the others still skip
    availability.worked()
    assert availability.may_try() and not availability.down


def test_a_sender_probes_only_when_due_and_sends_once_it_answers() -> None:
    clock, service = Clock(), Service()
    availability = _availability(clock, service)
    availability.failed("ConnectionError")

    async def rounds() -> list[bool]:
        seen = []
        for _ in range(5):
            seen.append(await availability.probe_when_due())
            clock.now += 1.0
            if clock.now >= 104.0:
                service.up = True
        return seen

    assert asyncio.run(rounds()) == [False, False, False, False, True]
    assert service.asked == 2  # at 102 (away) and 104 (back); not every round
    assert not availability.down


def test_wait_until_up_tells_the_services_outage_from_the_turns_failure() -> None:
    clock, service = Clock(), Service()
    availability = _availability(clock, service)
    service.up = True
    assert asyncio.run(availability.wait_until_up()) is False  # it answers: the turn failed
    service.up = False

    async def back_later() -> bool:
        waiting = asyncio.create_task(availability.wait_until_up())
        while clock.now < 110.0:
            await asyncio.sleep(0)
        service.up = True
        return await waiting

    assert asyncio.run(back_later()) is True
    assert 110.0 <= clock.now <= 112.0  # found back within one probe interval


def test_only_a_watched_backend_has_an_availability() -> None:
    class Local:
        name = "local"

    assert availability_of(Local()) is None


def test_a_process_that_stops_calling_still_finds_the_service_back() -> None:
    clock, service = Clock(), Service()
    availability = _availability(clock, service)

    async def run() -> None:
        availability.failed("ConnectionError")  # the last call this process makes
        while clock.now < 107.0:
            await asyncio.sleep(0)
        assert availability.down and service.asked >= 2  # the watcher probed, away
        service.up = True
        while availability.down and clock.now < 120.0:
            await asyncio.sleep(0)

    asyncio.run(run())
    assert not availability.down and clock.now <= 110.0
