"""The console mounted at /console — on its own (`thoth console`, ``bridge/cli/console.py``)
or beside Slack's endpoint (`thoth serve`) — and the operator's one-time sign-in link."""

from __future__ import annotations

from starlette.routing import Mount

from bridge.app import Thoth
from bridge.console.cookie_secret import cookie_secret
from bridge.console.dependencies import console_dependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import console_app
from bridge.slack_api.sign_in_with_slack import slack_sign_in

PATH = "/console"


def console_mount(app: Thoth, login: OneTimeLogin) -> Mount:
    settings = app.settings
    # Read before anything is built: a kept secret that cannot be used stops the start.
    secret = cookie_secret(settings.console_secret, settings.thoth_home)
    parts = console_dependencies(app)
    return Mount(PATH, console_app(
        parts, secret=secret, login=login,
        slack=slack_sign_in(settings, parts.slack, parts.workspace_of),
        public_url=settings.console_url,
        https_only=(settings.console_url or "").startswith("https://")))


def sign_in_link(host: str, port: int, login: OneTimeLogin) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    # In the path, not as ``?token=``: a line with "token=" in it is redacted as a secret
    # wherever Thoth prints or logs it.
    return f"http://{shown}:{port}{PATH}/login/{login.token}"
