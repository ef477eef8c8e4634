"""How a route answers: a page filled in for the signed-in person (with the CSRF token
its forms send back), the sign-in page, a refusal, or back to a page after a change.
Shared so every page carries the same header, links and token, whichever module serves
it.

Decided: a refusal (a bad address, a page that is not theirs, a change that cannot be
made) is a page in the console's layout saying why, with a way back (the page they came
from, when it is the console's, else the overview), never bare text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from bridge.access.signed_in import SignedInPerson, user_of
from bridge.console import csrf
from bridge.console.dependencies import ConsoleDependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.slack_api.sign_in_with_slack import SlackSignIn
from layers.shared.errors import ThothError


@dataclass(frozen=True)
class Console:
    """One console app, as its routes reach it: what it reads and changes, its templates,
    and how people sign in to it (``public_url``: where browsers reach it, CONSOLE_URL)."""

    parts: ConsoleDependencies
    templates: Jinja2Templates
    login: OneTimeLogin | None
    slack: SlackSignIn | None
    public_url: str | None

    def page(self, request: Request, user: SignedInPerson, template: str,
             **context: Any) -> Response:
        return self.templates.TemplateResponse(request, template, {
            "user": user, "base": base(request),
            "csrf_field": csrf.FIELD, "csrf_token": csrf.token_for(request.session),
            **context,
        })

    def refused(self, request: Request, status: int, why: str) -> Response:
        """A page saying why nothing was shown or done, with a way back; in the header
        the signed-in person's links, when someone is."""
        session = request.session if "session" in request.scope else {}
        return self.templates.TemplateResponse(request, "error.html", {
            "user": user_of(session), "base": base(request),
            "csrf_field": csrf.FIELD, "csrf_token": csrf.token_for(session) if session else "",
            "title": REFUSALS.get(status, "That did not work"), "why": why,
            "back": way_back(request),
        }, status_code=status)

    def signed_out(self, request: Request, why: str | None = None) -> Response:
        if request.method == "GET" and "session" in request.scope and why is None:
            # Back to this page once signed in (a link from Slack, opened signed out).
            request.session[AFTER_SIGN_IN] = request.url.path + (
                f"?{request.url.query}" if request.url.query else "")
        return self.templates.TemplateResponse(
            request, "signed_out.html",
            {"base": base(request), "why": why, "slack": self.slack is not None},
            status_code=401)


# Where a browser signed out on the way to a page goes once it has signed in.
AFTER_SIGN_IN = "after_sign_in"

# A refusal's heading, by its status.
REFUSALS = {
    400: "That cannot be read", 403: "Not yours to see or change", 404: "Not here",
    405: "Not a way to ask for this", 409: "Not done", 500: "Something went wrong",
}


async def then_back(console: Console, request: Request, page: str,
                    change: Callable[[], Awaitable[object]]) -> Response:
    """Make ``change``, then back to ``page``; a change refused (``ThothError``) is a 409
    saying why."""
    try:
        await change()
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return RedirectResponse(f"{base(request)}/{page}", status_code=303)


def console_page(path: str, *, default: str) -> str:
    """``path`` when it is one of the console's own pages (as a form sends back where it
    was shown, filters and all), else ``default``: never another site, nor a way out."""
    if path.startswith("/") and not path.startswith("//") and "\\" not in path and (
            path.partition("?")[0].count("..") == 0):
        return path.partition("#")[0]
    return default


def way_back(request: Request) -> str:
    """The console page the browser came from, else the overview: never another site's."""
    home = base(request) + "/"
    came_from = request.headers.get("referer", "")
    ours = f"{request.url.scheme}://{request.url.netloc}{home}"
    if came_from.startswith(ours) and came_from != str(request.url):
        return came_from.removeprefix(f"{request.url.scheme}://{request.url.netloc}")
    return home


def base(request: Request) -> str:
    """Where the console is mounted (/console), for its links."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def origin(request: Request) -> str:
    return f"console {request.client.host if request.client else 'unknown'}"


def quoted(text: str) -> str:
    return quote(text, safe="")
