"""`thoth mcp`: Thoth's memory as an MCP server over stdio, for a client the person
starts (Claude Code, Cursor, Codex: the README has their configuration)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from bridge.mcp.asker import Asker
from layers.shared.errors import BadInput
from layers.shared.places import LOCAL_TEAM


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp", help="serve Thoth's memory to an MCP client over stdio")
    parser.add_argument("--team", help="the asker's Slack workspace id (with --user)")
    parser.add_argument("--user", help="the asker's Slack user id (default: you, as in"
                                       " thoth chat)")
    parser.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    # Imported here: the MCP SDK (starlette, pydantic models) would slow every command's
    # start (bench/cli_start.py).
    import anyio

    from bridge.mcp.server import mcp_server, the_one

    server = mcp_server(app, the_one(asker_of(args)), origin="mcp stdio")
    # Standard output is the protocol's channel: the process's own, not the redacting
    # wrapper every other command prints through (what goes out is stored memory,
    # redacted when it was stored). Logs go to standard error.
    with contextlib.redirect_stdout(sys.__stdout__):
        anyio.run(server.run_stdio_async)
    return 0


def asker_of(args: argparse.Namespace) -> Asker:
    if args.team and not args.user:
        raise BadInput("--team needs --user: the Slack user who asks in that workspace")
    if args.team:
        return Asker(args.team, args.user)
    return Asker(LOCAL_TEAM, args.user or login_name())

