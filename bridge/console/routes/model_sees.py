"""What the model sees: a conversation's latest context, and the persona and skills as
installed."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import model_sees
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import GOVERNED, Declared, Page


async def session_context(console: Console, request: Request,
                          user: SignedInPerson) -> Response:
    seen = await model_sees.seen_in(console.parts, user, request.path_params["session_id"])
    if seen is None:
        return console.refused(request, 404, "No such conversation that you may read.")
    return console.page(request, user, "model_sees.html", seen=seen)


async def installed(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "installed.html",
                        installed=await model_sees.installed(console.parts))


ROUTES: tuple[Declared, ...] = (
    Page("/sessions/{session_id}/context", session_context),
    # MEMORY.md holds the kept notes, said in DMs and private channels: the founders'.
    Page("/persona", installed, operators_only=GOVERNED),
)
