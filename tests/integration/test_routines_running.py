"""Routines run by the clock a test moves (``RoutineRunner.tick(now)``), on each engine:
once per due time whichever process looks, a missed run after downtime run once (or not
at all past the grace), never twice after a process died mid-run, in the creator's time
zone through daylight saving, paused when its place can no longer be posted to."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bridge.routines.running import RoutineRunner, RunResult
from bridge.routines.store import Routine, RoutineStore
from bridge.routines.tables import SCHEMA
from layers.shared.audit.log import AuditLog
from layers.shared.audit.tables import SCHEMA as AUDIT
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema

GENERAL = Place("T1", "C1", "public", None, "general")
MONDAY_9 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday, London is on UTC
HOUR = timedelta(hours=1)


class Posts:
    """What the transport was asked to run: (routine, due)."""

    def __init__(self, result: RunResult | None = None) -> None:
        self.ran: list[tuple[str, datetime]] = []
        self.result = result or RunResult(True, "posted in #general", "1.1")

    async def __call__(self, routine: Routine, due: datetime) -> RunResult:
        self.ran.append((routine.id, due))
        return self.result


@pytest.fixture
def db(open_database: Callable[[Sequence[Schema]], Database]) -> Database:
    return open_database([SCHEMA, AUDIT])


def _made(db: Database, cron: str = "0 9 * * 1-5", zone: str = "Europe/London",
          first: datetime = MONDAY_9) -> Routine:
    return RoutineStore(db).create(GENERAL, "U1", "dana", "post yesterday's decisions",
                                   cron, zone, first.timestamp())


def _runner(db: Database, posts: Posts, owner: str = "replica-a",
            grace: timedelta = 2 * HOUR) -> RoutineRunner:
    return RoutineRunner(Offloaded(RoutineStore(db)), posts, Offloaded(AuditLog(db)),
                         grace_s=grace.total_seconds(), owner=owner)


def test_a_routine_runs_once_at_its_time_and_then_at_its_next(db: Database) -> None:
    routine, posts = _made(db), Posts()
    runner = _runner(db, posts)
    assert asyncio.run(runner.tick(MONDAY_9 - timedelta(minutes=1))) == 0
    assert asyncio.run(runner.tick(MONDAY_9 + timedelta(seconds=30))) == 1
    assert asyncio.run(runner.tick(MONDAY_9 + timedelta(minutes=1))) == 0
    assert posts.ran == [(routine.id, MONDAY_9)]
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None and kept.next_run_at == (MONDAY_9 + 24 * HOUR).timestamp()
    (run,) = RoutineStore(db).runs_of(routine.id)
    assert run.outcome == "posted" and run.posted_ts == "1.1"
    assert [e.action for e in AuditLog(db).entries(action="routine.run")] == ["routine.run"]


def test_two_replicas_looking_at_once_run_it_once(db: Database) -> None:
    routine, posts = _made(db), Posts()
    replicas = [_runner(db, posts, owner=f"replica-{n}") for n in range(3)]

    async def together() -> list[int]:
        return list(await asyncio.gather(*(r.tick(MONDAY_9 + timedelta(seconds=5))
                                           for r in replicas)))

    assert sorted(asyncio.run(together())) == [0, 0, 1]
    assert posts.ran == [(routine.id, MONDAY_9)]


def test_after_downtime_a_missed_routine_runs_once_within_the_grace(db: Database) -> None:
    routine, posts = _made(db), Posts()
    # Down from Monday 8:00 to Wednesday 9:30: three times passed, one run, for the last.
    wednesday_9 = MONDAY_9 + 48 * HOUR
    asyncio.run(_runner(db, posts).tick(wednesday_9 + timedelta(minutes=30)))
    assert posts.ran == [(routine.id, wednesday_9)]
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None and kept.next_run_at == (wednesday_9 + 24 * HOUR).timestamp()


def test_past_the_grace_a_missed_run_is_recorded_not_made_up(db: Database) -> None:
    routine, posts = _made(db), Posts()
    asyncio.run(_runner(db, posts).tick(MONDAY_9 + 3 * HOUR))
    assert posts.ran == []
    (run,) = RoutineStore(db).runs_of(routine.id)
    assert run.outcome == "missed"
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None and kept.next_run_at == (MONDAY_9 + 24 * HOUR).timestamp()


def test_a_run_begun_by_a_process_that_died_is_not_run_again(db: Database) -> None:
    routine, posts = _made(db), Posts()
    store = RoutineStore(db)
    # Replica A claimed it and began the run, then died: its claim lapses.
    at = MONDAY_9.timestamp() + 1
    assert [r.id for r in store.claim_due(at, "replica-a", 60, 10)] == [routine.id]
    assert store.begin_run(routine.id, MONDAY_9.timestamp(), "replica-a")
    asyncio.run(_runner(db, posts, owner="replica-b").tick(MONDAY_9 + timedelta(minutes=2)))
    assert posts.ran == []
    (run,) = store.runs_of(routine.id)
    assert run.outcome == "failed" and "interrupted" in (run.detail or "")
    kept = store.get(routine.id)
    assert kept is not None and kept.next_run_at == (MONDAY_9 + 24 * HOUR).timestamp()


def test_the_time_is_the_creators_through_daylight_saving(db: Database) -> None:
    # 9:00 in London: 09:00 UTC on Friday 26 March 2027, 08:00 UTC on Monday 29 March.
    friday = datetime(2027, 3, 26, 9, 0, tzinfo=UTC)
    routine, posts = _made(db, first=friday), Posts()
    runner = _runner(db, posts)
    asyncio.run(runner.tick(friday + timedelta(seconds=1)))
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None and kept.next_run_at is not None
    monday = datetime.fromtimestamp(kept.next_run_at, UTC)
    assert monday == datetime(2027, 3, 29, 8, 0, tzinfo=UTC)
    assert monday.astimezone(ZoneInfo("Europe/London")).hour == 9


def test_a_paused_routine_does_not_run_and_resumes_from_now(db: Database) -> None:
    routine, posts = _made(db), Posts()
    store = RoutineStore(db)
    assert store.pause(routine.id, "paused by dana")
    asyncio.run(_runner(db, posts).tick(MONDAY_9 + timedelta(seconds=1)))
    assert posts.ran == []
    assert store.resume(routine.id, (MONDAY_9 + 24 * HOUR).timestamp())
    asyncio.run(_runner(db, posts).tick(MONDAY_9 + 24 * HOUR + timedelta(seconds=1)))
    assert posts.ran == [(routine.id, MONDAY_9 + 24 * HOUR)]


def test_a_place_that_cannot_be_posted_to_pauses_the_routine(db: Database) -> None:
    routine = _made(db)
    posts = Posts(RunResult(False, "not posted: Thoth is not in #general",
                            pause_why="Thoth is no longer in #general"))
    asyncio.run(_runner(db, posts).tick(MONDAY_9 + timedelta(seconds=1)))
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None and kept.state == "paused"
    assert kept.paused_why == "Thoth is no longer in #general"
    actions = [e.action for e in AuditLog(db).entries()]
    assert "routine.failed" in actions and "routine.pause" in actions


def test_a_time_the_fall_back_night_repeats_runs_once(db: Database) -> None:
    # 01:30 in New York comes twice on 7 November 2027 (05:30 and 06:30 UTC): one run.
    first = datetime(2027, 11, 7, 5, 30, tzinfo=UTC)
    routine, posts = _made(db, cron="30 1 * * *", zone="America/New_York", first=first), Posts()
    runner = _runner(db, posts)
    for moment in (first, first + HOUR, first + 2 * HOUR):
        asyncio.run(runner.tick(moment + timedelta(seconds=5)))
    assert posts.ran == [(routine.id, first)]
    kept = RoutineStore(db).get(routine.id)
    assert kept is not None
    assert kept.next_run_at == datetime(2027, 11, 8, 6, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("cron", "said"), [
    ("0 9 1 * 1", "both a day of the month and a day of the week"),
    ("*/5 * * * *", "at most every 15 minutes"),
    ("0 9 * *", "five fields"),
    ("0 9 * * 8", "not a weekday"),
])
def test_a_schedule_that_cannot_be_is_one_line(cron: str, said: str) -> None:
    from bridge.routines.schedule import Schedule
    from layers.shared.errors import BadInput

    with pytest.raises(BadInput, match=said) as refused:
        Schedule.parsed(cron, "UTC", min_interval_min=15)
    assert "\n" not in str(refused.value)
