"""Episodes: the search, each episode's page, and forgetting one."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.access.signed_in import SignedInPerson
from bridge.console.pages import episodes
from bridge.console.routes.answers import (
    Console,
    base,
    console_page,
    origin,
    quoted,
    way_back,
)
from bridge.console.routes.guard import Change, Declared, Page
from layers.shared.errors import BadInput


async def search(console: Console, request: Request, user: SignedInPerson) -> Response:
    asked = request.query_params
    query, view_as = asked.get("q", ""), asked.get("as", "")
    reader = episodes.seen_as(user, view_as)
    problem, listed = None, episodes.Listed([])
    try:
        # A channel named as people know it ("#general"), for its id.
        channel = await console.parts.names.channel_named(reader.team,
                                                          asked.get("channel", ""))
        listed = await episodes.search(
            console.parts, reader, query, episodes.filter_of(asked, channel=channel),
            older=asked.get("older", ""), page=_page_number(asked.get("page", "")))
    except BadInput as error:
        problem = str(error)
    named = await console.parts.names.of(hit.episode for hit in listed.hits)
    return console.page(request, user, "episodes.html", query=query, hits=listed.hits,
                        named=named, states=await episodes.states_of(console.parts,
                                                                     listed.hits),
                        listed=listed, asked=asked, problem=problem,
                        here=_query_without(asked, "older", "page", "said"),
                        here_all=_query_without(asked, "said"),
                        said=asked.get("said", ""),
                        view_as=view_as if reader is not user else "",
                        may_forget=lambda episode: episodes.may_forget(reader, episode))


def _page_number(text: str) -> int:
    try:
        return int(text or "1")
    except ValueError as error:
        raise BadInput("page is a number") from error


def _query_without(asked: Mapping[str, str], *names: str) -> str:
    """The page's query string without ``names``: a page link keeps every filter."""
    return urlencode([(name, value) for name, value in asked.items()
                      if name not in names and value])


async def episode(console: Console, request: Request, user: SignedInPerson) -> Response:
    shown = await episodes.page_of(console.parts, user, request.path_params["episode_id"])
    if shown is None:
        return console.refused(request, 404, "No such episode that you may see.")
    # Forgotten from its own page: back to the list the person came from, when it was
    # the console's (its filters kept), else to the newest.
    came_from = way_back(request).removeprefix(base(request))
    back = came_from if came_from.partition("?")[0] == "/episodes" else "/episodes"
    named = await console.parts.names.of([shown.episode])
    return console.page(request, user, "episode.html", shown=shown, back=back, named=named,
                        said=request.query_params.get("said", ""),
                        may_forget=episodes.may_forget(user, shown.episode))


async def forget(console: Console, request: Request, user: SignedInPerson) -> Response:
    episode_id = request.path_params["episode_id"]
    if not await episodes.forget(console.parts, user, episode_id, origin(request)):
        return console.refused(request, 404, "No such episode of yours.")
    form = await request.form()
    back = console_page(str(form.get("back") or ""), default="/episodes")
    said = f"said={quoted('Forgotten for good: that exchange, its turn and its waiting notes.')}"
    return RedirectResponse(f"{base(request)}{back}{'&' if '?' in back else '?'}{said}",
                            status_code=303)


async def set_state(console: Console, request: Request, user: SignedInPerson) -> Response:
    episode_id = request.path_params["episode_id"]
    state = str((await request.form()).get("state") or "")
    if state not in episodes.STATE_ACTIONS:
        return console.refused(request, 400, "A memory is live, paused or archived.")
    if not await episodes.set_state(console.parts, user, episode_id, state, origin(request)):
        return console.refused(request, 404, "No such episode of yours.")
    said = {"live": "Resumed: recall brings it up again.",
            "paused": "Paused: recall passes it by until you resume it.",
            "archived": "Archived: recall passes it by; it is kept aside."}[state]
    return RedirectResponse(
        f"{base(request)}/episodes/{quoted(episode_id)}?said={quoted(said)}", status_code=303)


ROUTES: tuple[Declared, ...] = (
    Page("/episodes", search),
    # Imported episode ids may hold any character, "/" included.
    Change("/episodes/{episode_id:path}/forget", forget),
    Change("/episodes/{episode_id:path}/state", set_state),
    Page("/episodes/{episode_id:path}", episode),
)
