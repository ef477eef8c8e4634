"""`thoth console`: the memory console in a browser, on this machine (127.0.0.1)."""

from __future__ import annotations

import argparse
import signal
import threading
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
    return serve_console(app, out, host=args.host, port=args.port)


def serve_console(app: Thoth, out: TextIO, *, host: str, port: int) -> int:
    """The console at /console and MCP at /mcp on one port, with the operator's link."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import RedirectResponse, Response
    from starlette.routing import Route

    # Imported here: the MCP SDK and uvicorn take a while, and only this command serves.
    from bridge.access.ways_in import ways_in
    from bridge.console.serving import PATH, console_mount, sign_in_link
    from bridge.console.sign_in import OneTimeLogin
    from bridge.mcp.http import mcp_over_http
    from bridge.mcp.oauth import MCP_PATH
    from bridge.web.server import WebServer, lifespan_of

    login = OneTimeLogin()

    async def home(request: Request) -> Response:
        return RedirectResponse(f"{PATH}/", status_code=307)

    # MCP at /mcp as well: in Socket Mode `thoth serve` listens on no port.
    mcp_route, mcp_sessions = mcp_over_http(app, host=host)
    server = WebServer(Starlette(routes=[Route("/", home), console_mount(app, login), mcp_route],
                                 lifespan=lifespan_of(mcp_sessions)),
                       host=host, port=port)
    server.start()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(f"Thoth's memory console: open {sign_in_link(host, server.port, login)}"
          " (the link signs you in once, as the operator)", file=out, flush=True)
    # Never "token: /thoth": the output's redaction takes what follows "token:" for a secret.
    print(f"MCP for coding agents: http://{host}:{server.port}{MCP_PATH}"
          f" ({ways_in(app.settings)})", file=out, flush=True)
    try:
        stop.wait()
    finally:
        server.stop()
    return 0

