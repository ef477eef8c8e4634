"""Reflections: each finished session's report and what became of its proposals."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import reflections
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import GOVERNED, Declared, Page


async def reports(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "reflections.html",
                        reflections=await reflections.finished(console.parts))


ROUTES: tuple[Declared, ...] = (Page("/reflections", reports, operators_only=GOVERNED),)
