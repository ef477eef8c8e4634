"""`thoth serve`: the Slack bridge, in Socket Mode (app token) or HTTP mode (--port)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bridge.app import Thoth


def register(commands: Any) -> None:
    parser = commands.add_parser("serve", help="run the Slack bridge")
    parser.add_argument("--port", type=_port, default=3000, help="HTTP mode: port to listen on")
    parser.add_argument("--host", default="0.0.0.0", help="HTTP mode: address to listen on")
    parser.set_defaults(handler=run_serve, runs_turns=True, long_running=True)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535; 0 picks a free one)")
    return int(text)


def run_serve(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    from bridge.cli.serving import serve

    return serve(args, app, out)
