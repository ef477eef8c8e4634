"""`thoth people show|forget USER`: what the identity layer knows about a person."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.identity.protocol import IdentityBackend, Person
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.places import CHANNEL_TYPES, LOCAL_TEAM, Viewer


def register(commands: Any) -> None:
    parser = commands.add_parser("people", help="show or forget what is known about a person")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    show = actions.add_parser("show", help="what is known about USER")
    show.add_argument("user", help="a Slack user id (or the terminal login name)")
    show.add_argument("--team", default=LOCAL_TEAM, help="the person's workspace id")
    show.add_argument(
        "--channel",
        help="show what may be read in this channel (default: a DM with the person)",
    )
    show.add_argument(
        "--channel-type", choices=CHANNEL_TYPES, default="public",
        help="with --channel: its type",
    )
    show.add_argument(
        "--all", action="store_true",
        help="the operator's view: every fact, from every place (with where it was said)",
    )
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=run_show)
    forget = actions.add_parser(
        "forget", help="delete what Thoth keeps of USER: facts, DMs with Thoth, notes")
    forget.add_argument("user", help="a Slack user id (or the terminal login name)")
    forget.add_argument("--team", default=LOCAL_TEAM, help="the person's workspace id")
    forget.add_argument("--fact", help="delete only this fact (an id from `people show`)")
    forget.set_defaults(handler=run_forget)


def run_show(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    facts = asyncio.run(_backend(app).facts(Person(args.team, args.user), _viewer(args)))
    if args.json:
        records = [
            {"id": f.id, "text": f.text, "at": f.at, "source": f.source, "session": f.session_id}
            for f in facts
        ]
        print(json.dumps(records, ensure_ascii=False), file=out)
        return 0
    if not facts:
        print(f"nothing is known about {args.user} in {args.team}", file=out)
    for fact in facts:
        day = datetime.fromtimestamp(fact.at, UTC).date().isoformat()
        where = f", session {fact.session_id}" if args.all and fact.session_id else ""
        print(f"{fact.id}  {day}  {fact.text}  ({fact.source}{where})", file=out)
    return 0


def _viewer(args: argparse.Namespace) -> Viewer | None:
    """Whose eyes: a DM with the person unless a channel or the operator's view is asked."""
    if args.all:
        return None
    if args.channel:
        return Viewer(args.team, args.channel, args.channel_type, None)
    return Viewer(args.team, f"dm:{args.user}", "im", args.user)


def run_forget(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    if not args.user.strip():
        raise BadInput("say whose facts to forget: thoth people forget USER")
    person = Person(args.team, args.user)
    if args.fact is not None:
        # An empty --fact is a mistake, never "all of them".
        if not args.fact.strip():
            raise BadInput("--fact needs a fact id (thoth people show USER lists them)")
        _backend(app)  # a fact is the identity layer's: say so when it is off
        deleted = asyncio.run(app.forgetting.forget_fact([person], args.fact,
                                                         actor=login_name(), origin="cli"))
        if not deleted:
            raise BadInput(f"{args.user} has no fact {args.fact!r} (thoth people show"
                           f" {args.user} lists them)")
        said = f"deleted {deleted} fact(s)"
    else:
        said = asyncio.run(app.forgetting.forget([person], actor=login_name(),
                                                 origin="cli")).describe()
    print(f"forgot {args.user}: {said}", file=out)
    return 0


def _backend(app: Thoth) -> IdentityBackend:
    if app.identity is None:
        raise ConfigurationError("the identity layer is off (HONCHO_DISABLED=true)")
    return app.identity
