"""`thoth chat`: talk to the agent in the terminal (the same pipeline as Slack)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from bridge.settings import Settings
from bridge.terminal.attach import check_path, check_room, local_file
from bridge.terminal.chat import ChatDependencies, ChatLoop, ChatOptions, terminal_lines

HISTORY_FILE = "chat_history"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "chat", help="talk to the agent (reads stdin when it is not a terminal)"
    )
    parser.add_argument("--session", help="resume this session instead of starting a new one")
    parser.add_argument("--user", help="who is speaking (default: your login name)")
    parser.add_argument("--file", action="append", default=[], metavar="PATH",
                        help="send this file with the first message (repeatable; in the"
                             " chat, /attach PATH sends one with the next)")
    parser.set_defaults(handler=run_chat, runs_turns=True, before_build=check_files)


def check_files(args: argparse.Namespace, settings: Settings) -> None:
    """A --file that is not a file to read refuses the chat before anything starts."""
    for count, path in enumerate(args.file):
        check_room(count)
        check_path(path)


def run_chat(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    stdin = sys.stdin
    interactive = stdin.isatty() and out.isatty()
    options = ChatOptions(
        user=args.user or login_name(),
        session_id=args.session,
        interactive=interactive,
        history_file=app.settings.thoth_home / HISTORY_FILE,
        files=tuple(local_file(path, app.file_reader.limits) for path in args.file),
        limits=app.file_reader.limits,
    )
    lines = terminal_lines("you> ", options.history_file) if interactive else iter(stdin)
    parts = ChatDependencies(
        pipeline=app.pipeline,
        sessions=app.sessions,
        commands=app.commands,
        identity_ingest=app.identity_ingest,
        housekeeping=app.housekeeping,
        warm_up=app.warm_up,
    )
    return ChatLoop(parts, options, out, sys.stderr).run(lines)
