"""The console as one ASGI app: its routes (``routes/``, a module a page, each declaring
its guard), its templates, and the signed session cookie a sign-in sets.

Every page needs a signed-in person (else the signed-out page, 401); every change is a
POST carrying the session's CSRF token (else 403) and is written to the audit log with
who, when and from where.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from bridge.console.dependencies import ConsoleDependencies
from bridge.console.routes import (
    audit,
    connections,
    episodes,
    export,
    health,
    imports,
    model_sees,
    notes,
    overview,
    people,
    reflections,
    routines,
    sign_in,
    skills,
    spend,
    tokens,
)
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, routed
from bridge.console.sign_in import OneTimeLogin
from bridge.slack_api.sign_in_with_slack import SlackSignIn
from bridge.web.security_headers import SecurityHeaders

HERE = Path(__file__).parent
SESSION_COOKIE = "thoth_console"
# A sign-in lasts a working day.
SESSION_MAX_AGE_S = 12 * 3600
# Tried in this order: inside a module, a route comes before a wider one that would also
# match its paths (``/notes/{note_id}/edit`` before ``/notes/{note_id}/{decision}``).
ROUTES: tuple[Declared, ...] = (
    *overview.ROUTES, *sign_in.ROUTES, *episodes.ROUTES, *notes.ROUTES, *skills.ROUTES,
    *people.ROUTES, *reflections.ROUTES, *health.ROUTES, *spend.ROUTES, *export.ROUTES,
    *imports.ROUTES, *tokens.ROUTES, *audit.ROUTES, *model_sees.ROUTES,
    *connections.ROUTES, *routines.ROUTES,
)


def console_app(
    parts: ConsoleDependencies, *, secret: str | None, login: OneTimeLogin | None,
    slack: SlackSignIn | None = None, public_url: str | None = None, https_only: bool = False,
) -> Starlette:
    """The console as an ASGI app, to mount at /console. ``secret`` signs its cookies
    (None: a new one for this process); ``login`` is the operator's one-time link;
    ``slack`` signs members in; ``public_url`` is where browsers reach it (CONSOLE_URL)."""
    # Autoescaped: what memory holds is people's words, shown as text, never as markup.
    templates = Jinja2Templates(env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True))
    templates.env.filters["when"] = _when
    templates.env.filters["web_address"] = web_address
    console = Console(parts, templates, login, slack, public_url)
    served: list[BaseRoute] = [routed(console, declared) for declared in ROUTES]

    async def no_such_page(request: Request, error: Exception) -> Response:
        status = error.status_code if isinstance(error, HTTPException) else 500
        return console.refused(request, status, _WHY.get(status, _WHY[500]))

    return Starlette(
        routes=[*served, Mount("/static", StaticFiles(directory=HERE / "static"),
                               name="static")],
        exception_handlers={404: no_such_page, 405: no_such_page, 500: no_such_page},
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(SessionMiddleware, secret_key=secret or secrets.token_urlsafe(32),
                       session_cookie=SESSION_COOKIE, max_age=SESSION_MAX_AGE_S,
                       same_site="lax", https_only=https_only),
        ],
    )


# What the console says where no route of its own answered.
_WHY = {
    404: "The console has no page at this address.",
    405: "This address is not asked for that way: use the console's own links and buttons.",
    500: "Something went wrong on the server; its log says what. Nothing was changed.",
}


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M")


def web_address(text: str | None) -> str | None:
    """``text`` when it is an http(s) address, for a link to open; None otherwise. What
    memory holds may have been imported from anywhere: a "javascript:" permalink is
    shown as text, never a link."""
    address = (text or "").strip()
    return address if urlsplit(address).scheme.lower() in ("http", "https") else None
