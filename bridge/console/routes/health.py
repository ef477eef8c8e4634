"""Health: what `thoth doctor` checks, run when the page is opened."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page


async def checks(console: Console, request: Request, user: SignedInPerson) -> Response:
    if console.parts.health is None:
        return console.refused(request, 404, "No health checks here.")
    found, age_s = await console.parts.health.checks()
    return console.page(request, user, "health.html", checks=found, age_s=age_s)


ROUTES: tuple[Declared, ...] = (
    Page("/health", checks, operators_only="The health checks are the operator's."),
)
