"""`thoth sessions`: the sessions, open and ended, with their place and short id."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any, TextIO

from bridge.app import Thoth
from layers.working.sessions import Session

SHORT_ID = 8


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "sessions", help="list sessions, open and ended, latest first, with their short ids"
    )
    parser.add_argument("--open", action="store_true", help="only the open ones")
    parser.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.set_defaults(handler=run_sessions)


def run_sessions(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    listed = app.sessions.listed(open_only=args.open, limit=max(1, args.limit))
    if not listed:
        print("no sessions yet: `thoth chat` starts one" if not args.open
              else "no open sessions", file=out)
        return 0
    for session in listed:
        turns = app.transcript.count(session.id)
        if args.json:
            print(json.dumps(_record(session, turns)), file=out)
        else:
            state = "ended" if session.ended else "open"
            print(f"{session.id[:SHORT_ID]}  {state:<5}  {_when(session.last_turn_at)}"
                  f"  {turns:>3} turn(s)  {_where(session)}", file=out)
    if not args.json:
        print("a session is named by any unique start of its id: thoth chat --session"
              " ID, thoth reflect ID", file=out)
    return 0


def _record(session: Session, turns: int) -> dict[str, Any]:
    place = session.place
    return {"id": session.id, "open": not session.ended, "team": place.team,
            "channel": place.channel, "channel_type": place.channel_type,
            "thread_ts": place.thread_ts, "started_at": session.started_at,
            "last_turn_at": session.last_turn_at, "ended_at": session.ended_at,
            "turns": turns}


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M")


def _where(session: Session) -> str:
    place = session.place
    if session.key.startswith("terminal:"):
        return "thoth chat"
    thread = f", thread {place.thread_ts}" if place.thread_ts else ""
    return f"{place.channel_type} {place.channel} in {place.team}{thread}"
