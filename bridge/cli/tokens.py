"""`thoth tokens make|list|revoke`: people's tokens for MCP over HTTP (`thoth serve`'s
/mcp), from the operator's terminal. People make their own with `/thoth token` in a DM
with Thoth; the operator makes one for someone, lists them all, and revokes any.

A new token is printed once, on a line of its own, past the output's redaction (which
would otherwise hide it as the secret it is); only its hash is kept.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any, TextIO

from bridge.access.tokens import McpToken
from bridge.app import Thoth
from bridge.cli.login import login_name
from bridge.cli.redacted_output import show_once

ORIGIN = "cli"


def register(commands: Any) -> None:
    parser = commands.add_parser("tokens", help="people's tokens for MCP over HTTP")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))

    make = actions.add_parser("make", help="a token for a Slack user (printed once)")
    make.add_argument("--team", required=True, help="their Slack workspace id")
    make.add_argument("--user", required=True, help="their Slack user id")
    make.add_argument("--label", required=True, help='what it is for ("laptop Claude Code")')
    make.set_defaults(handler=run_make)

    listing = actions.add_parser("list", help="every token: whose, what for, when last used")
    listing.set_defaults(handler=run_list)

    revoke = actions.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("token_id", help="the token's id (thoth tokens list shows it)")
    revoke.set_defaults(handler=run_revoke)


def run_make(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    token, secret = app.mcp_tokens.make(args.team, args.user, label=args.label,
                                        made_by=login_name(), origin=ORIGIN)
    # The id is never right after the word "token": the output's redaction would take it
    # for the secret such a phrase usually holds.
    print(f"made {token.id} for {token.team}:{token.user} ({token.label}), an MCP token"
          " shown once, below: give it to them, and it goes in their MCP client's"
          " Authorization header as Bearer", file=out)
    show_once(out, secret)
    return 0


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    tokens = app.mcp_tokens.listed()
    if not tokens:
        print("no tokens", file=out)
    for token in tokens:
        print(_line(token), file=out)
    return 0


def run_revoke(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    token = app.mcp_tokens.revoke(args.token_id, by=login_name(), origin=ORIGIN)
    print(f"revoked {token.id} ({token.team}:{token.user}, {token.label})", file=out)
    return 0


def _line(token: McpToken) -> str:
    state = f"revoked {_day(token.revoked_at)}" if token.revoked_at is not None else "live"
    used = _day(token.last_used_at) if token.last_used_at is not None else "never"
    return (f"{token.id}  {token.team}:{token.user}  {state:<18}  made {_day(token.made_at)}"
            f"  last used {used}  {token.label}")


def _day(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M")
