"""Running the routines that are due: claimed from the database by whichever process
looks first, each run begun once, its outcome kept and audited, its next time set.

Decided:
- After downtime, a routine that missed several times runs once, for the latest time it
  missed, if that was within ``grace_s``; later than that, the run is recorded as missed
  and not made up (a digest posted half a day late is noise). Then its schedule goes on
  from now.
- "Run now" moves the routine's next time to now; the schedule goes on after it.
- What a run does is the transport's (``RunsRoutine``: in Slack, a turn as its creator
  posted to its place); a run that fails is kept as failed with its one line, and a place
  that can no longer be posted to pauses the routine, saying why.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bridge.routines.schedule import Schedule
from bridge.routines.store import Routine, RoutineStore
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

# A claim outlives a run's longest turn: a process that dies holding one loses it then.
LEASE_S = 15 * 60.0
# Routines claimed at one look, and run at once by one process.
BATCH = 100
AT_ONCE = 16


@dataclass(frozen=True)
class RunResult:
    """What a run did: posted (where), or failed (why, in one line); ``pause_why``: its
    place can no longer be posted to, so the routine is paused."""

    ok: bool
    detail: str
    posted_ts: str | None = None
    pause_why: str | None = None


class RunsRoutine(Protocol):
    async def __call__(self, routine: Routine, due: datetime) -> RunResult: ...


class RoutineRunner:
    def __init__(self, store: Offloaded[RoutineStore], run: RunsRoutine,
                 audit: Offloaded[AuditLog], *, grace_s: float, owner: str | None = None,
                 lease_s: float = LEASE_S) -> None:
        self._store = store
        self._run = run
        self._audit = audit
        self._grace_s = grace_s
        self._lease_s = lease_s
        self.owner = owner or f"routines-{uuid.uuid4().hex[:8]}"
        self._at_once = asyncio.Semaphore(AT_ONCE)

    async def tick(self, now: datetime | None = None) -> int:
        """Run what is due by ``now`` (a test's clock; else the time), batch after batch
        until none is left that no other process holds; how many this one claimed."""
        at = now or datetime.now(UTC)
        total = 0
        while True:
            claimed = await self._store.run(lambda store: store.claim_due(
                at.timestamp(), self.owner, self._lease_s, BATCH))
            await asyncio.gather(*(self._one(routine, at) for routine in claimed))
            total += len(claimed)
            if len(claimed) < BATCH:
                return total

    async def _one(self, routine: Routine, at: datetime) -> None:
        async with self._at_once:
            try:
                await self._due(routine, at)
            except Exception:
                # Moved on to its next time: a routine that cannot be run is not retried
                # at every look.
                log.exception("routine %s could not be run", routine.id)
                following = Schedule(routine.cron, routine.zone).next_run(after=at)
                await self._store.run(lambda store: store.release(
                    routine.id, self.owner,
                    None if following is None else following.timestamp(), None))

    async def _due(self, routine: Routine, at: datetime) -> None:
        assert routine.next_run_at is not None
        schedule = Schedule(routine.cron, routine.zone)
        due = _latest_due(schedule, routine.next_run_at, at)
        following = schedule.next_run(after=at)
        next_at = None if following is None else following.timestamp()
        if at.timestamp() - due > self._grace_s:
            await self._store.run(lambda store: store.end_run(
                routine.id, due, "missed", "not run: the time it was due passed while no"
                " process of Thoth's was running"))
            await self._store.run(lambda store: store.release(routine.id, self.owner, next_at,
                                                              None))
            await self._audited(routine, "routine.missed", f"due {_when(due)}")
            return
        if not await self._store.run(lambda store: store.begin_run(routine.id, due, self.owner)):
            await self._store.run(lambda store: store.release(routine.id, self.owner, next_at,
                                                              None))
            return
        try:
            # Within its claim: past it, another process would take the routine over.
            result = await asyncio.wait_for(self._run(routine, datetime.fromtimestamp(due, UTC)),
                                            max(self._lease_s - 60, 1))
        except TimeoutError:
            result = RunResult(False, f"failed: it took longer than {self._lease_s - 60:g} s")
        except Exception as error:
            log.exception("routine %s failed", routine.id)
            result = RunResult(False, f"failed: {type(error).__name__}")
        await self._store.run(lambda store: store.end_run(
            routine.id, due, "posted" if result.ok else "failed", result.detail,
            result.posted_ts))
        await self._store.run(lambda store: store.release(routine.id, self.owner, next_at,
                                                          at.timestamp()))
        await self._audited(routine, "routine.run" if result.ok else "routine.failed",
                            f"due {_when(due)}; {result.detail}")
        if result.pause_why is not None:
            why = result.pause_why
            if await self._store.run(lambda store: store.pause(routine.id, why)):
                await self._audited(routine, "routine.pause", why)

    async def _audited(self, routine: Routine, action: str, detail: str) -> None:
        await self._audit.run(lambda audit: audit.record(
            actor="routines", action=action, target=f"routine:{routine.id}",
            origin=self.owner, detail=f"{routine.team}:{routine.creator}'s; {detail}"))


def _latest_due(schedule: Schedule, due: float, at: datetime) -> float:
    """The latest of the routine's times due by ``at``, from its next time ``due`` on: a
    routine that missed several runs runs once."""
    latest = due
    following = schedule.next_run(after=datetime.fromtimestamp(due, UTC))
    while following is not None and following <= at:
        latest = following.timestamp()
        following = schedule.next_run(after=following)
    return latest


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")
