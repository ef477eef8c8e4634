"""People (a member's "About me"): what the identity layer holds about one person, and
forgetting one fact or everything."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import people, tool_grants
from bridge.console.routes.answers import Console, base, origin, quoted
from bridge.console.routes.guard import Change, Declared, Page
from layers.identity.protocol import Person
from layers.shared.errors import ThothError


async def person_page(console: Console, request: Request, user: SignedInPerson) -> Response:
    # A member's page is their own: "what Thoth knows about me".
    team, who = people.whose_page(user, request.query_params.get("team", ""),
                                  request.query_params.get("user", ""))
    shown = None
    if team or who:
        try:
            person = people.person_of(team, who)
            shown = await people.whole(
                console.parts, user, await people.known_as_by(console.parts, user, person),
                request.query_params.get("older", ""))
        except ThothError as error:
            return console.refused(request, 400, f"Sorry: {error}")
    named = await console.parts.names.of(
        [hit.episode for hit in shown.said.hits] if shown is not None else [])
    return console.page(request, user, "people.html", team=team, who=who, shown=shown,
                        named=named,
                        identity_on=console.parts.identity is not None,
                        said=request.query_params.get("said", ""))


async def confirm_forget(console: Console, request: Request,
                         user: SignedInPerson) -> Response:
    """What forgetting everything would delete and keep, and the button that does it."""
    person = _forgettable(console, request, user)
    if isinstance(person, Response):
        return person
    would = await people.what_forgetting_does(
        console.parts, await people.every_key(console.parts, person))
    return console.page(request, user, "forget_person.html", team=person.team,
                        who=person.user, would=would, own=(person.team, person.user) == (
                            user.team, user.user))


async def forget_fact(console: Console, request: Request, user: SignedInPerson) -> Response:
    person = _forgettable(console, request, user)
    if isinstance(person, Response):
        return person
    deleted = await people.forget_fact(
        console.parts, user, await people.every_key(console.parts, person),
        request.path_params["fact_id"], origin(request))
    return _back_to_person(request, person, f"deleted {deleted} fact(s)")


async def forget_person(console: Console, request: Request, user: SignedInPerson) -> Response:
    person = _forgettable(console, request, user)
    if isinstance(person, Response):
        return person
    forgotten = await people.forget_everything(
        console.parts, user, await people.every_key(console.parts, person), origin(request))
    return _back_to_person(request, person, forgotten.describe())


async def withdraw_note(console: Console, request: Request, user: SignedInPerson) -> Response:
    """A note the person asked for, taken back by them (or the operator), as removing
    its 🧠 does."""
    person = _forgettable(console, request, user)
    if isinstance(person, Response):
        return person
    try:
        await people.withdraw_own_note(console.parts, user, person,
                                       request.path_params["note_id"], origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return _back_to_person(request, person, "Withdrawn: that note is out of memory.")


async def revoke_tool(console: Console, request: Request, user: SignedInPerson) -> Response:
    """A tool the person always allows, asked about again from now on: by them, or from
    the operator's view (founders, the operator)."""
    person = _forgettable(console, request, user)
    if isinstance(person, Response):
        return person
    form = await request.form()
    try:
        said = await tool_grants.revoke(
            console.parts, user, await people.every_key(console.parts, person),
            str(form.get("server") or ""), str(form.get("tool") or ""), origin(request))
    except ThothError as error:
        return console.refused(request, 409, f"Sorry: {error}")
    return _back_to_person(request, person, said)


def _forgettable(console: Console, request: Request,
                 user: SignedInPerson) -> Person | Response:
    """The person a forget's path names, or the answer to one ``user`` may not make."""
    team, who = request.path_params["team"], request.path_params["user"]
    if not people.may_forget(user, team, who):
        return console.refused(request, 403, "Only what is known about you.")
    try:
        return people.person_of(team, who)
    except ThothError as error:
        return console.refused(request, 400, f"Sorry: {error}")


def _back_to_person(request: Request, person: Person, said: str) -> Response:
    query = "&".join(f"{k}={quoted(v)}" for k, v in
                     (("team", person.team), ("user", person.user), ("said", said)))
    return RedirectResponse(f"{base(request)}/people?{query}", status_code=303)


ROUTES: tuple[Declared, ...] = (
    Page("/people", person_page),
    Change("/people/{team}/{user}/facts/{fact_id}/forget", forget_fact),
    Change("/people/{team}/{user}/notes/{note_id}/withdraw", withdraw_note),
    # The server and tool ride in the form: a tool's name may hold a "/".
    Change("/people/{team}/{user}/tools/revoke", revoke_tool),
    Page("/people/{team}/{user}/forget", confirm_forget),
    Change("/people/{team}/{user}/forget", forget_person),
)
