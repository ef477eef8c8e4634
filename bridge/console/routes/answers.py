"""How a route answers: a page filled in for the signed-in person (with the CSRF token
its forms send back), the sign-in page, or back to a page after a change. Shared so every
page carries the same header, links and token, whichever module serves it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from bridge.access.signed_in import SignedInPerson
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

    def signed_out(self, request: Request, why: str | None = None) -> Response:
        return self.templates.TemplateResponse(
            request, "signed_out.html",
            {"base": base(request), "why": why, "slack": self.slack is not None},
            status_code=401)


async def then_back(request: Request, page: str,
                    change: Callable[[], Awaitable[object]]) -> Response:
    """Make ``change``, then back to ``page``; a change refused (``ThothError``) is a 409
    saying why."""
    try:
        await change()
    except ThothError as error:
        return PlainTextResponse(f"Sorry: {error}", status_code=409)
    return RedirectResponse(f"{base(request)}/{page}", status_code=303)


def base(request: Request) -> str:
    """Where the console is mounted (/console), for its links."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def origin(request: Request) -> str:
    return f"console {request.client.host if request.client else 'unknown'}"


def quoted(text: str) -> str:
    return quote(text, safe="")
