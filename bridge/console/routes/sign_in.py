"""Signing in and out: the operator's one-time link, Sign in with Slack (its start and
Slack's redirect back), and signing out. The console's ways in: the only routes a
signed-out browser reaches, so each is declared ``Open`` here and nowhere else."""

from __future__ import annotations

import secrets

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson, user_of
from bridge.console.routes.answers import AFTER_SIGN_IN, Console, base, origin
from bridge.console.routes.guard import Change, Declared, Open
from layers.shared.errors import ThothError


async def login(console: Console, request: Request) -> Response:
    offered = str(request.path_params.get("token", ""))
    user = console.login.redeem(offered) if console.login is not None and offered else None
    if user is None:
        if user_of(request.session) is not None:
            # Signed in already (the link opened again, from the history or a second
            # click): the console, not a sign-in page that suggests they are out.
            return RedirectResponse(base(request) + "/", status_code=303)
        return console.signed_out(request, "That sign-in link is used up, lapsed or wrong:"
                                           " start the console again for a new one.")
    return await _signed_in(console, request, user)


async def slack_sign_in(console: Console, request: Request) -> Response:
    if console.slack is None:
        return console.signed_out(request, "Sign in with Slack is not set up here"
                                           " (SLACK_CLIENT_ID and SLACK_CLIENT_SECRET).")
    url, state = console.slack.authorize_url(_callback(console, request))
    request.session["slack_state"] = state
    return RedirectResponse(url, status_code=303)


async def slack_callback(console: Console, request: Request) -> Response:
    expected = request.session.pop("slack_state", None)
    state, code = request.query_params.get("state"), request.query_params.get("code")
    if console.slack is None or not expected or not state or not code or not (
            secrets.compare_digest(str(expected), state)):
        return console.signed_out(request, "That sign-in did not start here, or has been"
                                           " used: sign in with Slack again.")
    try:
        user = await console.slack.complete(code, _callback(console, request))
    except ThothError as error:
        return console.signed_out(request, str(error))
    return await _signed_in(console, request, user)


async def logout(console: Console, request: Request, user: SignedInPerson) -> Response:
    request.session.clear()
    return RedirectResponse(base(request) + "/", status_code=303)


async def _signed_in(console: Console, request: Request, user: SignedInPerson) -> Response:
    going = str(request.session.get(AFTER_SIGN_IN) or "")
    request.session.clear()
    request.session.update(user.as_session())
    await console.parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="login", target="console", origin=origin(request)))
    # Only a page of the console itself ("//elsewhere" is another site's address).
    inside = going.startswith(base(request) + "/") and not going.startswith("//")
    return RedirectResponse(going if inside else base(request) + "/", status_code=303)


def _callback(console: Console, request: Request) -> str:
    """Where Slack sends the browser back: the same on the way there and back."""
    root = console.public_url.rstrip("/") if console.public_url else (
        f"{request.url.scheme}://{request.url.netloc}")
    return f"{root}{base(request)}/signin/slack/callback"


ROUTES: tuple[Declared, ...] = (
    Open("/login", login),
    Open("/login/{token}", login),
    Change("/logout", logout),
    Open("/signin/slack", slack_sign_in),
    Open("/signin/slack/callback", slack_callback),
)
