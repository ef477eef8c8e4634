"""Routines (issue 53): a member's own, and every one for founders and the operator, each
with where it posts, its schedule in its creator's time zone, whether it is paused and
why, its next run and its last runs with their outcome; pausing, resuming, running now
and deleting one, as ``RoutineManager`` does it everywhere (checked: only its creator,
or a founder or the operator; audited as ``routine.pause`` and the like).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.names import KINDS
from bridge.routines.managing import RoutineManager
from bridge.routines.store import Routine, Run
from layers.shared.errors import BadInput

# The last runs shown with each routine.
RUNS_SHOWN = 5


@dataclass(frozen=True)
class ShownRun:
    # When it was due, in the routine's zone.
    due: str
    run: Run


@dataclass(frozen=True)
class Shown:
    routine: Routine
    # Where it posts: "#general", "a DM with Thoth".
    place: str
    # Its next time, in its zone (None: paused, or its schedule never runs again).
    next_run: str | None
    runs: list[ShownRun]


def sees_all(user: SignedInPerson) -> bool:
    """Founders and the operator see, and may change, every routine."""
    return user.founder or user.sees_everything


async def shown(parts: ConsoleDependencies, user: SignedInPerson) -> list[Shown]:
    """The routines ``user`` may see, each with its last runs."""
    everything = sees_all(user)
    team, person = user.team, user.user
    if not everything and (team is None or person is None):
        return []

    def read(stores: ConsoleStores) -> list[tuple[Routine, list[Run]]]:
        store = stores.routines
        routines = (store.listed() if everything
                    else store.of_person(team or "", person or ""))
        return [(routine, store.runs_of(routine.id, RUNS_SHOWN)) for routine in routines]

    return [_shown(routine, runs) for routine, runs in await parts.stores.run(read)]


async def change(parts: ConsoleDependencies, user: SignedInPerson, routine_id: str,
                 action: str, origin: str) -> str:
    """Make ``action`` (pause, resume, run-now, delete) on the routine; what the page then
    says. ``BadInput``, in one line, when it is not theirs or cannot be done."""
    manager = _manager(parts)
    by, may_all = user.actor, sees_all(user)
    if action == "pause":
        paused = await manager.pause(routine_id, by=by, may_all=may_all, origin=origin)
        return f"Paused routine {paused.id}: it does not run until it is resumed."
    if action == "resume":
        resumed = await manager.resume(routine_id, by=by, may_all=may_all, origin=origin)
        next_run = _next_run(resumed)
        return f"Resumed routine {resumed.id}" + (f": it runs next {next_run}."
                                                  if next_run else ".")
    if action == "run-now":
        due = await manager.run_now(routine_id, by=by, may_all=may_all, origin=origin)
        return f"Routine {due.id} runs within the minute; its schedule goes on after."
    if action == "delete":
        await manager.delete(routine_id, by=by, may_all=may_all, origin=origin)
        return f"Deleted routine {routine_id}, with its runs."
    raise BadInput(f"{action!r} is not something a routine does")


def _manager(parts: ConsoleDependencies) -> RoutineManager:
    if parts.routines is None:
        raise BadInput("routines are not kept by this console")
    return parts.routines


def _shown(routine: Routine, runs: list[Run]) -> Shown:
    zone = ZoneInfo(routine.zone)
    return Shown(routine, _place(routine), _next_run(routine),
                 [ShownRun(_at(run.due_at, zone), run) for run in runs])


def _next_run(routine: Routine) -> str | None:
    if routine.state != "active" or routine.next_run_at is None:
        return None
    return _at(routine.next_run_at, ZoneInfo(routine.zone))


def _place(routine: Routine) -> str:
    place = routine.place
    if place.channel_type == "im":
        named = KINDS["im"]
    elif place.channel_name:
        named = f"#{place.channel_name}"
    else:
        named = f"{KINDS.get(place.channel_type, 'a channel')} ({place.channel})"
    return f"{named}, in a thread" if place.thread_ts else named


def _at(moment: float, zone: ZoneInfo) -> str:
    return datetime.fromtimestamp(moment, UTC).astimezone(zone).strftime("%a %Y-%m-%d %H:%M")
