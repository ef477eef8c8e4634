"""The audit log: the page, and all of it as JSON lines."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import audit
from bridge.console.routes.answers import Console
from bridge.console.routes.guard import Declared, Page

THE_OPERATORS = "The audit log is the operator's."


async def log(console: Console, request: Request, user: SignedInPerson) -> Response:
    action = request.query_params.get("action", "")
    actor = request.query_params.get("actor", "")
    return console.page(request, user, "audit.html", action=action, actor=actor,
                        entries=await audit.entries(console.parts, action, actor))


async def json_lines(console: Console, request: Request, user: SignedInPerson) -> Response:
    return PlainTextResponse(await audit.as_json_lines(console.parts),
                             media_type="application/x-ndjson")


ROUTES: tuple[Declared, ...] = (
    Page("/audit", log, operators_only=THE_OPERATORS),
    Page("/audit.jsonl", json_lines, operators_only=THE_OPERATORS, refuse_signed_out=True),
)
