"""`thoth mcp`: Thoth's memory as an MCP server over stdio, for a client the person
starts (Claude Code, Cursor, Codex: the README has their configuration)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from bridge.messages import NO_MEMORY
from bridge.settings import Settings
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.places import LOCAL_TEAM

if TYPE_CHECKING:
    # Imported when asked for: Asker's module loads Slack's async client and aiohttp
    # (0.2 s), which every command would pay for at start (bench/cli_start.py).
    from bridge.mcp.asker import Asker


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp", help="serve Thoth's memory to an MCP client over stdio")
    parser.add_argument("--team", help="the asker's Slack workspace id (with --user)")
    parser.add_argument("--user", help="the asker's Slack user id (default: you, as in"
                                       " thoth chat)")
    parser.set_defaults(handler=run_mcp, before_build=check_can_start)


def check_can_start(args: argparse.Namespace, settings: Settings) -> None:
    """Refuse to serve a memory that is not there, before anything is created.

    A client started with no THOTH_HOME (or a mistyped one) would otherwise get a new,
    empty home, and every recall would answer [] as if the team had said nothing.
    """
    asker_of(args)  # bad arguments are said first, as by every other command
    if settings.database_url is None and not settings.db_path.is_file():
        home = (f"THOTH_HOME={settings.thoth_home}" if "thoth_home" in settings.model_fields_set
                else f"THOTH_HOME is not set, so {settings.thoth_home}")
        raise ConfigurationError(NO_MEMORY.format(db=settings.db_path, home=home))


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
    from bridge.mcp.asker import Asker

    if args.team and not args.user:
        raise BadInput("--team needs --user: the Slack user who asks in that workspace")
    if args.team:
        return Asker(args.team, args.user)
    return Asker(LOCAL_TEAM, args.user or login_name())

