"""`thoth mcp`: Thoth's memory as an MCP server over stdio, for a client the person
starts (Claude Code, Cursor, Codex: the README has their configuration).

It answers the client's handshake before it opens the memory, and opens the memory on a
worker thread beside it (``bridge/mcp/opening.py``); a memory that cannot be opened (a
damaged database, unreadable SLACK_TOKEN_KEYS) ends the server with the one line any
command would say.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from bridge.cli.failures import EXIT_FAILURE, said
from bridge.cli.login import login_name
from bridge.messages import NO_MEMORY
from bridge.settings import Settings
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.places import LOCAL_TEAM

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from bridge.app import Thoth

    # Imported when asked for: Asker's module loads Slack's async client and aiohttp
    # (0.2 s), which every command would pay for at start (bench/cli_start.py).
    from bridge.mcp.asker import Asker
    from bridge.mcp.opening import Opening


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp", help="serve Thoth's memory to an MCP client over stdio")
    parser.add_argument("--team", help="the asker's Slack workspace id (with --user)")
    parser.add_argument("--user", help="the asker's Slack user id (default: you, as in"
                                       " thoth chat)")
    parser.set_defaults(handler=run_mcp, before_build=check_can_start, app_when_asked=True)


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


def run_mcp(args: argparse.Namespace, settings: Settings, open_app: Callable[[], Thoth],
            out: TextIO) -> int:
    # Imported here: the MCP SDK (starlette, pydantic models) would slow every command's
    # start (bench/cli_start.py).
    import anyio

    from bridge.mcp.opening import Opening
    from bridge.mcp.server import mcp_server, the_one

    def opened() -> Thoth:
        thoth = open_app()
        # The installs too: SLACK_TOKEN_KEYS that cannot be read ends the start in its
        # one line (the tools are built only when a client first asks for them).
        thoth.slack.installations  # noqa: B018
        return thoth

    app = Opening(opened)
    server = mcp_server(app, the_one(asker_of(args)), origin="mcp stdio")
    try:
        # Standard output is the protocol's channel: the process's own, not the redacting
        # wrapper every other command prints through (what goes out is stored memory,
        # redacted when it was stored). Logs go to standard error.
        with contextlib.redirect_stdout(sys.__stdout__):
            anyio.run(_serve, server, app, settings)
    finally:
        if app.is_open:
            app.opened().close()
    return 0


async def _serve(server: MCPServer, app: Opening[Thoth], settings: Settings) -> None:
    """Serve the client, the memory opening beside the handshake."""
    import anyio

    async with anyio.create_task_group() as group:
        group.start_soon(_open_or_end, app, settings)
        await server.run_stdio_async()
        group.cancel_scope.cancel()


async def _open_or_end(app: Opening[Thoth], settings: Settings) -> None:
    """Open the memory; one that cannot be opened ends the process, saying why.

    Decided: ended with ``os._exit``, not by cancelling the server: the SDK reads the
    client's lines on a worker thread that a cancellation waits on, and a client that says
    nothing more after the handshake would keep a server that cannot serve alive. Nothing
    is lost: no call has been answered, so nothing was written.
    """
    try:
        await app()
    except Exception as error:
        line = said(error, settings.db_path)
        if line is None:
            logging.getLogger(__name__).exception("the memory could not be opened")
        print(line[0] if line else "error: the memory could not be opened (the log says why)",
              file=sys.stderr, flush=True)
        os._exit(line[1] if line else EXIT_FAILURE)


def asker_of(args: argparse.Namespace) -> Asker:
    from bridge.mcp.asker import Asker

    if args.team and not args.user:
        raise BadInput("--team needs --user: the Slack user who asks in that workspace")
    if args.team:
        return Asker(args.team, args.user)
    return Asker(LOCAL_TEAM, args.user or login_name())

