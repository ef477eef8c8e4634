"""`thoth notes list|approve|reject`: memory notes and the decisions on them.

The command line is the operator's: whoever runs it on the machine that holds
THOTH_HOME decides as a founder does from a card.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.notes.store import STATUSES, Note


def register(commands: Any) -> None:
    parser = commands.add_parser("notes", help="list, approve or reject memory notes")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))

    listing = actions.add_parser("list", help="notes waiting for a decision (--all: every note)")
    listing.add_argument("--all", action="store_true", help="kept, rejected and replaced too")
    listing.add_argument("--status", choices=STATUSES, help="only notes in this status")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=run_list)

    for name, keep, text in (
        ("approve", True, "keep a proposed note (standing memory where it was said)"),
        ("reject", False, "reject a proposed note"),
    ):
        decide = actions.add_parser(name, help=text)
        decide.add_argument("note_id", help="the note's id (thoth notes list shows it)")
        decide.add_argument("--by", help="who decides (default: your login name)")
        decide.set_defaults(handler=run_decide, keep=keep)


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    status = args.status or (None if args.all else "proposed")
    notes = app.notes.store.listed(status)
    if args.json:
        print(json.dumps([_record(note) for note in notes], ensure_ascii=False), file=out)
        return 0
    if not notes:
        print("no notes" if status is None else f"no {status} notes", file=out)
    for note in notes:
        print(f"{note.id}  {note.status:<8}  {_where(note)}  {note.text}", file=out)
    return 0


def run_decide(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    by = args.by or login_name()
    note = app.notes.decide(args.note_id, keep=args.keep, by=by)
    app.audit.record(actor=by, action="note.keep" if args.keep else "note.reject",
                     target=f"note:{note.id}", origin="cli")
    print(f"{note.status} note {note.id}: {note.text}", file=out)
    return 0


def _where(note: Note) -> str:
    place = note.place
    day = datetime.fromtimestamp(note.created_at, UTC).date().isoformat()
    return f"{day} {place.team}/{place.channel} ({place.channel_type})"


def _record(note: Note) -> dict[str, Any]:
    return {
        "id": note.id, "text": note.text, "status": note.status, "source": note.source,
        "team": note.place.team, "channel": note.place.channel,
        "channel_type": note.place.channel_type, "user": note.user,
        "author_name": note.author_name, "session_id": note.session_id,
        "decided_by": note.decided_by, "created_at": note.created_at,
    }
