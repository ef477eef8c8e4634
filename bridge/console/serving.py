"""The console on its own (`thoth console`) or beside Slack's endpoint (`thoth serve`):
mounted at /console, with the operator's one-time sign-in link."""

from __future__ import annotations

import signal
import threading
from typing import TextIO

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route

from bridge.app import Thoth
from bridge.console.parts import console_parts
from bridge.console.sign_in import OneTimeLogin
from bridge.console.slack_sign_in import slack_sign_in
from bridge.console.web_app import console_app

PATH = "/console"


def console_mount(app: Thoth, login: OneTimeLogin) -> Mount:
    settings = app.settings
    secret = settings.console_secret
    parts = console_parts(app)
    return Mount(PATH, console_app(
        parts, secret=secret.get_secret_value() if secret else None, login=login,
        slack=slack_sign_in(settings, parts.slack, parts.workspace_of),
        public_url=settings.console_url,
        https_only=(settings.console_url or "").startswith("https://")))


def sign_in_link(host: str, port: int, login: OneTimeLogin) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    # In the path, not as ``?token=``: a line with "token=" in it is redacted as a secret
    # wherever Thoth prints or logs it.
    return f"http://{shown}:{port}{PATH}/login/{login.token}"


def serve_console(app: Thoth, out: TextIO, *, host: str, port: int) -> int:
    from bridge.slack.http_server import WebServer

    login = OneTimeLogin()

    async def home(request: Request) -> Response:
        return RedirectResponse(f"{PATH}/", status_code=307)

    # MCP at /mcp as well: in Socket Mode `thoth serve` listens on no port.
    from bridge.mcp.http import mcp_over_http
    from bridge.slack.http_server import lifespan_of

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
    try:
        stop.wait()
    finally:
        server.stop()
    return 0
