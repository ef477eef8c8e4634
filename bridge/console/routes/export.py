"""Export: the page (with the import forms, ``imports.py``), the episodes one may see as
JSON lines, and the operator's brain as a git bundle."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import export
from bridge.console.routes.answers import Console, origin
from bridge.console.routes.guard import Declared, Page


async def export_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "export.html",
                        said=request.query_params.get("said", ""))


async def episodes_jsonl(console: Console, request: Request, user: SignedInPerson) -> Response:
    # Streamed (chunked): a million episodes are never held at once.
    return StreamingResponse(
        await export.episodes_jsonl(console.parts, user, origin(request)),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": 'attachment; filename="episodes.jsonl"'})


async def brain_bundle(console: Console, request: Request, user: SignedInPerson) -> Response:
    return Response(await export.brain_bundle(console.parts, user, origin(request)),
                    media_type="application/octet-stream",
                    headers={"Content-Disposition": 'attachment; filename="brain.bundle"'})


ROUTES: tuple[Declared, ...] = (
    Page("/export", export_page),
    Page("/export/episodes.jsonl", episodes_jsonl),
    Page("/export/brain.bundle", brain_bundle,
         operators_only="The brain's export is the operator's."),
)
