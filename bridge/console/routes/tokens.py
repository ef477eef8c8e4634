"""MCP tokens: one's own (the operator: everyone's), making one and revoking one."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import tokens
from bridge.console.routes.answers import Console, base, origin, then_back
from bridge.console.routes.guard import Change, Declared, Page
from layers.shared.errors import ThothError

# Where a token just made waits, in the session, for the one page that shows it.
NEW_TOKEN = "new_mcp_token"


async def tokens_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    # A token just made is shown on this one look at the page, then never again: it
    # rode here in the session from the POST (post, redirect, get: a reload makes no
    # second token).
    made = request.session.pop(NEW_TOKEN, None)
    response = console.page(request, user, "tokens.html", made=made,
                            tokens=await tokens.listed(console.parts, user),
                            mcp_url=_mcp_url(console, request))
    # The page may hold a secret: no cache, no history copy of it.
    response.headers["Cache-Control"] = "no-store"
    return response


async def make(console: Console, request: Request, user: SignedInPerson) -> Response:
    label = str((await request.form()).get("label") or "")
    try:
        token, secret = await tokens.make(console.parts, user, label, origin(request))
    except ThothError as error:
        return console.refused(request, 400, f"Sorry: {error}")
    request.session[NEW_TOKEN] = {"id": token.id, "label": token.label, "secret": secret}
    return RedirectResponse(f"{base(request)}/tokens", status_code=303)


async def revoke(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await then_back(console, request, "tokens", lambda: tokens.revoke(
        console.parts, user, request.path_params["token_id"], origin(request)))


def _mcp_url(console: Console, request: Request) -> str:
    """Where MCP is served: beside the console, at /mcp."""
    if console.public_url:
        return console.public_url.rstrip("/").removesuffix(base(request)) + "/mcp"
    return f"{request.base_url.scheme}://{request.base_url.netloc}/mcp"


ROUTES: tuple[Declared, ...] = (
    Page("/tokens", tokens_page),
    Change("/tokens", make),
    Change("/tokens/{token_id}/revoke", revoke),
)
