"""Connections: a person's own accounts on the team's remote servers, the sign-in's
start and the browser's return, and disconnecting."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import connections
from bridge.console.routes.answers import Console, base, origin, quoted
from bridge.console.routes.guard import Change, Declared, Page
from layers.shared.errors import ThothError


async def connections_page(console: Console, request: Request,
                           user: SignedInPerson) -> Response:
    return console.page(request, user, "connections.html",
                        shown=await connections.shown(console.parts, user),
                        said=request.query_params.get("said", ""))


async def start(console: Console, request: Request, user: SignedInPerson) -> Response:
    try:
        address = await connections.start(console.parts, user, request.path_params["server"],
                                           request.query_params.get("ask") or None)
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return RedirectResponse(address, status_code=303)


async def came_back(console: Console, request: Request, user: SignedInPerson) -> Response:
    query = request.query_params
    try:
        said = await connections.finish(
            console.parts, user, query.get("state", ""), code=query.get("code"),
            error=query.get("error_description") or query.get("error"),
            issuer=query.get("iss"), origin=origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Not connected: {error}")
    return _back(request, said)


async def disconnect(console: Console, request: Request, user: SignedInPerson) -> Response:
    try:
        said = await connections.disconnect(console.parts, user,
                                            request.path_params["server"], origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return _back(request, said)


def _back(request: Request, said: str) -> Response:
    return RedirectResponse(f"{base(request)}/connections?said={quoted(said)}",
                            status_code=303)


ROUTES: tuple[Declared, ...] = (
    Page("/connections", connections_page),
    Page("/connections/start/{server}", start),
    # The path of connect_callback (bridge/connections/oauth_client.py).
    Page("/connections/callback", came_back),
    Change("/connections/{server}/disconnect", disconnect),
)
