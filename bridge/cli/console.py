"""`thoth console`: the memory console in a browser, on this machine (127.0.0.1)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.serve import _port


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "console", help="see and govern what Thoth keeps, in a browser",
        description="Serve the memory console and print a one-time sign-in link.")
    parser.add_argument("--port", type=_port, default=8765, help="port to listen on")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: this machine only)")
    parser.set_defaults(handler=run_console, long_running=True)


def run_console(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    from bridge.console.serving import serve_console

    return serve_console(app, out, host=args.host, port=args.port)
