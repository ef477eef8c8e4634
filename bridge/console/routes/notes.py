"""Memory notes: those with a status, a note's versions, and a founder's edit, keep or
reject."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import notes
from bridge.console.routes.answers import Console, base, origin, then_back
from bridge.console.routes.guard import GOVERNED, Change, Declared, Page
from layers.shared.errors import ThothError


async def listed(console: Console, request: Request, user: SignedInPerson) -> Response:
    status = request.query_params.get("status", "proposed")
    older = request.query_params.get("older", "")
    try:
        found, more = await notes.listed(console.parts, status, older)
    except ThothError as error:
        return console.refused(request, 400, str(error))
    return console.page(request, user, "notes.html", status=status, listed=found,
                        older=more, paged=bool(older))


async def note(console: Console, request: Request, user: SignedInPerson) -> Response:
    note_id = request.path_params["note_id"]
    versions = await notes.chain(console.parts, note_id)
    if not versions:
        return console.refused(request, 404, "No such note.")
    return console.page(request, user, "note.html", note_id=note_id, versions=versions)


async def edit(console: Console, request: Request, user: SignedInPerson) -> Response:
    form = await request.form()
    try:
        newer = await notes.edit(console.parts, user, request.path_params["note_id"],
                                 str(form.get("text") or ""), origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return RedirectResponse(f"{base(request)}/notes/{newer.id}", status_code=303)


async def decide(console: Console, request: Request, user: SignedInPerson) -> Response:
    decision = request.path_params["decision"]
    if decision not in ("keep", "reject"):
        return console.refused(request, 404, "Keep or reject.")
    return await then_back(console, request, "notes", lambda: notes.decide(
        console.parts, user, request.path_params["note_id"], keep=decision == "keep",
        origin=origin(request)))


async def withdraw(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await then_back(console, request, "notes?status=rejected", lambda: notes.withdraw(
        console.parts, user, request.path_params["note_id"], origin(request)))


ROUTES: tuple[Declared, ...] = (
    Page("/notes", listed, operators_only=GOVERNED),
    Page("/notes/{note_id}", note, operators_only=GOVERNED),
    # Before the decisions: "edit" and "withdraw" are no decisions.
    Change("/notes/{note_id}/edit", edit, founders_only=True),
    Change("/notes/{note_id}/withdraw", withdraw, founders_only=True),
    Change("/notes/{note_id}/{decision}", decide, founders_only=True),
)
