"""The audit log: the page, and all of it as JSON lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleStores
from bridge.console.pages import audit
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page

THE_OPERATORS = "The audit log is the operator's."
# Entries a chunk of the JSON lines: one page read from the database.
PAGE = 1000


async def log(console: Console, request: Request, user: SignedInPerson) -> Response:
    action = request.query_params.get("action", "")
    actor = request.query_params.get("actor", "")
    return console.page(request, user, "audit.html", action=action, actor=actor,
                        entries=await audit.entries(console.parts, action, actor))


async def json_lines(console: Console, request: Request, user: SignedInPerson) -> Response:
    # Streamed a page at a time: the log only grows, and is never held whole.
    return StreamingResponse(console.parts.stores.stream(_json_lines),
                             media_type="application/x-ndjson")


def _json_lines(stores: ConsoleStores) -> Iterator[str]:
    """Every entry, newest first, as ``pages/audit.py``'s ``as_json_lines`` writes it."""
    before: int | None = None
    while page := stores.audit.entries(before_id=before, limit=PAGE):
        yield "".join(json.dumps(asdict(entry)) + "\n" for entry in page)
        before = page[-1].id


ROUTES: tuple[Declared, ...] = (
    Page("/audit", log, operators_only=THE_OPERATORS),
    Page("/audit.jsonl", json_lines, operators_only=THE_OPERATORS, refuse_signed_out=True),
)
