"""Skills and the brain's history: the drafts waiting and the commits made, one commit's
diff, and a founder's approve, reject or undo."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import skills
from bridge.console.routes.answers import Console, origin, then_back
from bridge.console.routes.guard import GOVERNED, Change, Declared, Page
from layers.shared.errors import ThothError


async def skills_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    return console.page(request, user, "skills.html",
                        view=await skills.skills_view(console.parts))


async def commit(console: Console, request: Request, user: SignedInPerson) -> Response:
    sha = request.path_params["sha"]
    try:
        diff = await skills.commit_diff(console.parts, sha)
    except ThothError as error:
        return console.refused(request, 404, f"Sorry: {error}")
    return console.page(request, user, "commit.html", sha=sha, diff=diff)


async def revert(console: Console, request: Request, user: SignedInPerson) -> Response:
    return await then_back(console, request, "skills", lambda: skills.undo(
        console.parts, user, request.path_params["sha"], origin(request)))


async def decide_draft(console: Console, request: Request, user: SignedInPerson) -> Response:
    decision = request.path_params["decision"]
    if decision not in ("approve", "reject"):
        return console.refused(request, 404, "Approve or reject.")
    return await then_back(console, request, "skills", lambda: skills.decide(
        console.parts, user, request.path_params["draft_id"],
        approve=decision == "approve", origin=origin(request)))


ROUTES: tuple[Declared, ...] = (
    Page("/skills", skills_page, operators_only=GOVERNED),
    Page("/skills/commits/{sha}", commit, operators_only=GOVERNED),
    Change("/skills/commits/{sha}/revert", revert, founders_only=True),
    Change("/skills/drafts/{draft_id}/{decision}", decide_draft, founders_only=True),
)
