"""Routines: the page (a member's own, or every one for founders and the operator), and
pausing, resuming, running now and deleting one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import routines
from bridge.console.routes.answers import Console, base, origin, quoted
from bridge.console.routes.guard import Change, Declared, Page
from layers.shared.errors import ThothError


async def routines_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "routines.html",
                        shown=await routines.shown(console.parts, user),
                        sees_all=routines.sees_all(user),
                        said=request.query_params.get("said", ""))


async def pause(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _changed(console, request, user, "pause")


async def resume(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _changed(console, request, user, "resume")


async def run_now(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _changed(console, request, user, "run-now")


async def delete(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _changed(console, request, user, "delete")


async def _changed(console: Console, request: Request, user: SignedInPerson,
                   action: str) -> Response:
    try:
        said = await routines.change(console.parts, user, request.path_params["routine_id"],
                                     action, origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return RedirectResponse(f"{base(request)}/routines?said={quoted(said)}", status_code=303)


ROUTES: tuple[Declared, ...] = (
    Page("/routines", routines_page),
    Change("/routines/{routine_id}/pause", pause),
    Change("/routines/{routine_id}/resume", resume),
    Change("/routines/{routine_id}/run-now", run_now),
    Change("/routines/{routine_id}/delete", delete),
)
