"""The overview, the console's front page (/): what each layer holds."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import overview
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page


async def front_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "overview.html",
                        overview=await overview.overview(console.parts))


ROUTES: tuple[Declared, ...] = (Page("/", front_page),)
