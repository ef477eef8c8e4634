"""Import, the operator's: episodes as JSON lines, or a brain's git bundle, then back to
the Export page saying what it did."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import BinaryIO

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import imports
from bridge.console.routes.answers import Console, base, origin, quoted
from bridge.console.routes.guard import Change, Declared
from layers.shared.errors import ThothError


async def episodes(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _imported(request, user, lambda upload, named: imports.episodes_from(
        console.parts, user, upload, named, origin(request)))


async def brain(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await _imported(request, user, lambda upload, named: imports.brain_from(
        console.parts, user, upload, origin(request)))


async def _imported(request: Request, user: SignedInPerson,
                    load: Callable[[BinaryIO, str], Awaitable[str]]) -> Response:
    """Run an import of the form's file, then back to Export saying what it did."""
    upload = (await request.form()).get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        said = "Choose a file to import."
    else:
        try:
            said = await load(upload.file, upload.filename)
        except ThothError as error:
            said = f"Sorry: {error}"
    return RedirectResponse(f"{base(request)}/export?said={quoted(said)}", status_code=303)


ROUTES: tuple[Declared, ...] = (
    Change("/import/episodes", episodes, operator_only=True),
    Change("/import/brain", brain, operator_only=True),
)
