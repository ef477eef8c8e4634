"""The console's one guard. A route is declared as what it is — a page to read, a change
to make, or a way in — and the check its kind needs is put in front of its handler here,
nowhere else: a handler is handed the person already admitted, so none can forget to ask
who is there, and no change can skip its CSRF token (a page of another site cannot read
the token, so cannot post a form in someone's name). The ways in (``Open``) are the one
kind a signed-out browser reaches: few, and all in ``sign_in.py``.

Signed out, a page answers with the sign-in page (401), where one can sign in; what is
the operator's or the founders' is refused to anyone else (403), saying whose it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.access.signed_in import SignedInPerson, user_of
from bridge.console import csrf
from bridge.console.routes.answers import Console

# Notes, drafts and the brain's history hold words from DMs and private channels:
# founders' and the operator's to read, as they are theirs to decide.
GOVERNED = "What waits for a decision, and what was decided, is the founders'."

Admitted = Callable[[Console, Request, SignedInPerson], Awaitable[Response]]
Anyone = Callable[[Console, Request], Awaitable[Response]]


@dataclass(frozen=True)
class Page:
    """Read (GET) by whoever is signed in."""

    path: str
    show: Admitted
    _: KW_ONLY
    # Why only the operator's view (the operator, founders) may read it; None: anyone.
    operators_only: str | None = None
    # Signed out, refused (403, saying whose it is) rather than shown the sign-in page:
    # a file a script fetches has no one to sign in.
    refuse_signed_out: bool = False


@dataclass(frozen=True)
class Change:
    """Made (POST) by whoever is signed in, with the session's CSRF token in the form."""

    path: str
    make: Admitted
    _: KW_ONLY
    founders_only: bool = False
    operator_only: bool = False


@dataclass(frozen=True)
class Open:
    """A way in: reached signed out, as there is no one to admit yet."""

    path: str
    answer: Anyone


Declared = Page | Change | Open


def routed(console: Console, declared: Declared) -> Route:
    """``declared`` as Starlette serves it, with its guard in front."""
    if isinstance(declared, Open):
        way_in = declared

        async def answer(request: Request) -> Response:
            return await way_in.answer(console, request)

        return Route(way_in.path, answer, name=way_in.answer.__name__)
    if isinstance(declared, Page):
        page = declared

        async def show(request: Request) -> Response:
            user = _reader(console, request, page)
            if isinstance(user, Response):
                return user
            return await page.show(console, request, user)

        return Route(page.path, show, name=page.show.__name__)
    change = declared

    async def make(request: Request) -> Response:
        user = await _changer(console, request, change)
        if isinstance(user, Response):
            return user
        return await change.make(console, request, user)

    return Route(change.path, make, methods=["POST"], name=change.make.__name__)


def _reader(console: Console, request: Request, page: Page) -> SignedInPerson | Response:
    """Who reads the page, or the answer to one who may not."""
    user = user_of(request.session)
    if user is None and not page.refuse_signed_out:
        return console.signed_out(request)
    if user is None or (page.operators_only is not None and not user.sees_everything):
        return console.refused(request, 403, page.operators_only or "Sign in first.")
    return user


async def _changer(console: Console, request: Request,
                   change: Change) -> SignedInPerson | Response:
    """Who makes the change, or the answer to a change that may not be made."""
    user = user_of(request.session)
    if user is None:
        return console.signed_out(request)
    form = await request.form()
    if not csrf.sent_back(request.session, form.get(csrf.FIELD)):
        return console.refused(request, 403, "This form is out of date: reload the page.")
    if change.founders_only and not user.founder:
        return console.refused(request, 403, "Only a founder may decide this.")
    if change.operator_only and not user.sees_everything:
        return console.refused(request, 403, "Only the operator may do this.")
    return user
