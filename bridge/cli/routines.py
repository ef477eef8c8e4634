"""`thoth routines list|pause|resume|delete`: every routine of every workspace, from the
operator's terminal, and changing any of them as the operator (``RoutineManager``: the
same checks and audit lines as the buttons in Slack and the console, ``origin`` "cli").
People list and change their own with `/thoth routines` in Slack, or in the console.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.routines.managing import RoutineManager
from bridge.routines.store import Routine, RoutineStore, Run
from layers.shared.offloaded import Offloaded

ORIGIN = "cli"
BY = "operator"
# The last runs `list --json` gives with each routine.
RUNS_LISTED = 5


def register(commands: Any) -> None:
    parser = commands.add_parser("routines", help="work Thoth does on a schedule: list, pause,"
                                 " resume, delete")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    listing = actions.add_parser("list", help="every routine: whose, where, when, its next and"
                                 " last run")
    listing.add_argument("--json", action="store_true",
                         help="one JSON document, with each routine's last runs")
    listing.set_defaults(handler=run_list)
    for action, does in (("pause", "pause a routine: it does not run until resumed"),
                         ("resume", "resume a paused routine, from its next time after now"),
                         ("delete", "delete a routine and its runs")):
        changed = actions.add_parser(action, help=does)
        changed.add_argument("routine_id", help="the routine's id (thoth routines list)")
        changed.set_defaults(handler=run_change, change=action)


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    store = RoutineStore(app.db)
    routines = store.listed()
    if args.json:
        print(json.dumps({"routines": [
            _record(routine, store.runs_of(routine.id, RUNS_LISTED)) for routine in routines
        ]}, ensure_ascii=False), file=out)
        return 0
    if not routines:
        print("no routines", file=out)
    for routine in routines:
        last = store.runs_of(routine.id, 1)
        print(_line(routine, last[0] if last else None), file=out)
    return 0


def run_change(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    manager = RoutineManager(Offloaded(RoutineStore(app.db)), Offloaded(app.audit))
    routine_id = args.routine_id
    if args.change == "pause":
        paused = asyncio.run(manager.pause(routine_id, by=BY, may_all=True, origin=ORIGIN))
        print(f"paused {paused.id} ({paused.team}:{paused.creator}'s)", file=out)
    elif args.change == "resume":
        resumed = asyncio.run(manager.resume(routine_id, by=BY, may_all=True, origin=ORIGIN))
        print(f"resumed {resumed.id}: next run {_when(resumed.next_run_at)}", file=out)
    else:
        asyncio.run(manager.delete(routine_id, by=BY, may_all=True, origin=ORIGIN))
        print(f"deleted {routine_id.strip()} and its runs", file=out)
    return 0


def _line(routine: Routine, last: Run | None) -> str:
    state = (f"paused ({routine.paused_why})" if routine.state == "paused" and routine.paused_why
             else routine.state)
    next_run = f"next {_when(routine.next_run_at)}" if routine.state == "active" else ""
    ran = (f"last {_when(last.due_at)} {last.outcome}" if last is not None
           else "not run yet")
    where = f"#{routine.place.channel_name}" if routine.place.channel_name else (
        routine.place.channel)
    return (f"{routine.id}  {routine.team}:{routine.creator}  {where}  {routine.cron}"
            f" ({routine.zone})  {state}  {next_run + '  ' if next_run else ''}{ran}"
            f"  {routine.instruction[:80]}")


def _record(routine: Routine, runs: list[Run]) -> dict[str, Any]:
    place = routine.place
    return {
        "id": routine.id, "team": routine.team, "creator": routine.creator,
        "creator_name": routine.creator_name, "instruction": routine.instruction,
        "cron": routine.cron, "zone": routine.zone, "state": routine.state,
        "paused_why": routine.paused_why,
        "place": {"channel": place.channel, "channel_type": place.channel_type,
                  "thread_ts": place.thread_ts, "channel_name": place.channel_name},
        "created_at": _iso(routine.created_at), "next_run_at": _iso(routine.next_run_at),
        "last_run_at": _iso(routine.last_run_at),
        "runs": [{**asdict(run), "due_at": _iso(run.due_at), "started_at": _iso(run.started_at),
                  "finished_at": _iso(run.finished_at)} for run in runs],
    }


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat()


def _when(moment: float | None) -> str:
    if moment is None:
        return "never"
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")
