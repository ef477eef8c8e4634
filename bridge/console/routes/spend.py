"""Spend: what the model cost, against the daily cap."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import spend
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page


async def report(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "spend.html", report=await spend.spend(console.parts),
                        cap_usd=console.parts.daily_cap_usd)


ROUTES: tuple[Declared, ...] = (
    Page("/spend", report, operators_only="What the model cost is the operator's."),
)
