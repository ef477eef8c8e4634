"""Changing a routine once it is made: pause, resume, run now, delete, whoever asks (the
buttons of `/thoth routines`, `thoth routines`, the console), each checked and audited in
one place.

Only the routine's creator may change it, or one who may change all (``may_all``: a
founder, the operator). ``by`` is the actor as the audit log names it ("slack:U1",
"operator"); a routine is its creator's when ``by`` is ``slack:CREATOR``.

Decided: resuming runs it next at its schedule's next time after now (times missed while
paused are not made up); "run now" moves its next time to now, and is refused for a paused
routine (the runner takes only active ones: resume it first).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bridge.routines.schedule import Schedule
from bridge.routines.store import CREATOR_DEACTIVATED, Routine, RoutineStore
from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded


class RoutineManager:
    def __init__(self, store: Offloaded[RoutineStore], audit: Offloaded[AuditLog]) -> None:
        self._store = store
        self._audit = audit

    async def pause(self, routine_id: str, *, by: str, may_all: bool, origin: str) -> Routine:
        """Paused (``BadInput`` if it is paused already)."""
        routine = await self._theirs(routine_id, by, may_all)
        why = f"paused by {by}"
        if not await self._store.run(lambda s: s.pause(routine.id, why)):
            raise BadInput(f"routine {routine.id} is paused already")
        await self._audited(by, "routine.pause", routine, origin)
        return await self._now(routine.id)

    async def resume(self, routine_id: str, *, by: str, may_all: bool, origin: str) -> Routine:
        """Active again from its next time after now (``BadInput`` if it is not paused)."""
        routine = await self._theirs(routine_id, by, may_all)
        if routine.paused_why == CREATOR_DEACTIVATED:
            # A run is its creator's turn: no one may run one as a person who is gone.
            raise BadInput(f"routine {routine.id} was paused because its creator was"
                           " deactivated: it stays paused (delete it, or make it anew)")
        following = Schedule(routine.cron, routine.zone).next_run(after=datetime.now(UTC))
        at = None if following is None else following.timestamp()
        if not await self._store.run(lambda s: s.resume(routine.id, at)):
            raise BadInput(f"routine {routine.id} is not paused")
        await self._audited(by, "routine.resume", routine, origin)
        return await self._now(routine.id)

    async def run_now(self, routine_id: str, *, by: str, may_all: bool,
                      origin: str) -> Routine:
        """Due now: the next look of the runner runs it, then its schedule goes on."""
        routine = await self._theirs(routine_id, by, may_all)
        if routine.state != "active":
            raise BadInput(f"routine {routine.id} is paused: resume it first")
        now = datetime.now(UTC).timestamp()
        await self._store.run(lambda s: s.move(routine.id, now))
        await self._audited(by, "routine.run_now", routine, origin)
        return await self._now(routine.id)

    async def delete(self, routine_id: str, *, by: str, may_all: bool, origin: str) -> None:
        """Gone, with its runs."""
        routine = await self._theirs(routine_id, by, may_all)
        if not await self._store.run(lambda s: s.delete(routine.id)):
            raise BadInput(f"there is no routine {routine.id}")
        await self._audited(by, "routine.delete", routine, origin)

    async def _theirs(self, routine_id: str, by: str, may_all: bool) -> Routine:
        routine = await self._store.run(lambda s: s.get(routine_id.strip()))
        if routine is None:
            raise BadInput(f"there is no routine {routine_id.strip()!r}")
        if not may_all and by != f"slack:{routine.creator}":
            raise BadInput(f"routine {routine.id} is not yours: only its creator (or a"
                           " founder) may change it")
        return routine

    async def _now(self, routine_id: str) -> Routine:
        routine = await self._store.run(lambda s: s.get(routine_id))
        if routine is None:
            raise BadInput(f"routine {routine_id} was deleted meanwhile")
        return routine

    async def _audited(self, by: str, action: str, routine: Routine, origin: str) -> None:
        await self._audit.run(lambda audit: audit.record(
            actor=by, action=action, target=f"routine:{routine.id}", origin=origin,
            detail=f"of slack:{routine.creator} in {routine.team}, {routine.cron}"
                   f" ({routine.zone}): {routine.instruction[:200]}"))
