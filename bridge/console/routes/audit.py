"""The audit log: the page, and all of it as JSON lines."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import audit
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page

THE_OPERATORS = "The audit log is the operator's."
# Entries a chunk of the JSON lines: one page read from the database.
PAGE = 1000


async def log(console: Console, request: Request, user: SignedInPerson) -> Response:
    asked = request.query_params
    action, actor = asked.get("action", ""), asked.get("actor", "")
    before = _entry_id(asked.get("before", ""))
    if before == BAD_PAGE:
        return console.refused(request, 400, "That page of the audit log is not one this"
                                             " console links to: start again from the newest.")
    shown, older = await audit.entries(console.parts, action, actor, before)
    return console.page(request, user, "audit.html", action=action, actor=actor,
                        entries=shown, older=older, paged=bool(before), kinds=audit.KINDS)


# An "Older" link's entry id that is not one (none is negative).
BAD_PAGE = -1
# The largest id either engine keeps (PostgreSQL's BIGINT).
MOST_ID = 2**63 - 1


def _entry_id(text: str) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or int(text) > MOST_ID:
        return BAD_PAGE
    return int(text)


async def json_lines(console: Console, request: Request, user: SignedInPerson) -> Response:
    # Streamed a page at a time: the log only grows, and is never held whole.
    return StreamingResponse(console.parts.stores.stream(audit.json_lines),
                             media_type="application/x-ndjson")


ROUTES: tuple[Declared, ...] = (
    Page("/audit", log, operators_only=THE_OPERATORS),
    Page("/audit.jsonl", json_lines, operators_only=THE_OPERATORS, refuse_signed_out=True),
)
