"""The two pages of signing in to MCP through OAuth that Thoth serves itself (the SDK
serves the rest, ``oauth.py``): Slack's redirect back, and the person's Allow or Deny.

The consent page needs no cookie: the id in its form was handed only to the browser
Slack signed in, is used once, and lapses in minutes. It is never framed (a click on
Allow is the person's own) and posts only to Thoth, which sends the browser on to the
client's own redirect address.
"""

from __future__ import annotations

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from bridge.mcp.oauth import CONSENT_PATH, SlackOAuth, redirect_origin
from bridge.web.security_headers import HEADERS
from layers.shared.errors import BadInput

log = logging.getLogger(__name__)


class SignInPages:
    def __init__(self, oauth: SlackOAuth) -> None:
        self._oauth = oauth

    async def slack_callback(self, request: Request) -> Response:
        state = request.query_params.get("state", "")
        code = request.query_params.get("code", "")
        if not code:
            # Slack sends ``error=access_denied`` when the person cancels there.
            return _page("Not signed in", "Slack did not sign you in"
                         f" ({request.query_params.get('error', 'no code')}): start again"
                         " from your MCP client.", status=400)
        try:
            consent, asked = await self._oauth.signed_in_with_slack(state, code)
        except (LookupError, BadInput) as refused:
            log.info("an MCP sign-in was refused: %s", refused)
            return _page("Not signed in", str(refused), status=400)
        # Registration let in only addresses an MCP client listens at (``oauth.py``).
        where = redirect_origin(str(asked["params"]["redirect_uri"])) or "?"
        body = (
            f"<p>{_e(asked['name'])}, <strong>{_e(asked['client_name'])}</strong> asks to"
            " read Thoth's memory as you: what you may read in Slack (your DMs with Thoth,"
            " public channels, the private channels you are in), and to propose notes and"
            " skills in your name.</p>"
            f"<p>It will receive its key at <code>{_e(where)}</code>. Allow only a client"
            " you just started yourself.</p>"
            f'<form method="post" action="{_e(_consent_path(request))}">'
            f'<input type="hidden" name="consent" value="{_e(consent)}">'
            '<button name="decision" value="allow">Allow</button> '
            '<button name="decision" value="deny">Deny</button></form>'
        )
        return _page("Allow this MCP client?", body, raw=True, form_action=where)

    async def consent(self, request: Request) -> Response:
        form = await request.form()
        decision = str(form.get("decision") or "")
        if decision not in ("allow", "deny"):
            return _page("Not signed in", "choose Allow or Deny", status=400)
        try:
            back = await self._oauth.decided(str(form.get("consent") or ""),
                                             allowed=decision == "allow")
        except LookupError as lapsed:
            return _page("Not signed in", str(lapsed), status=400)
        return RedirectResponse(back, status_code=303, headers=_headers(None))


def _consent_path(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/") + CONSENT_PATH


def _page(title: str, body: str, *, status: int = 200, raw: bool = False,
          form_action: str | None = None) -> HTMLResponse:
    shown = body if raw else f"<p>{_e(body)}</p>"
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)} · Thoth"
        f"</title></head><body><h1>{_e(title)}</h1>{shown}</body></html>",
        status_code=status, headers=_headers(form_action))


def _headers(form_action: str | None) -> dict[str, str]:
    # The console's headers, but the consent form's redirect goes on to the client's
    # address, which a browser checks against form-action too.
    allowed = "'self'" + (f" {form_action}" if form_action else "")
    policy = HEADERS["Content-Security-Policy"].replace("form-action 'self'",
                                                        f"form-action {allowed}")
    return {**HEADERS, "Content-Security-Policy": policy}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
