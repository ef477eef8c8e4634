"""Episodes: searched with the turns' own recall (or browsed, newest first) as the
signed-in person may see them, narrowed by place, person, date and feedback; each with
its provenance (the Slack thread, the files shared with it, session, model, cost, the
turns that recalled it);
forgotten for good by the person who asked, or the operator."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.paging import cursor_of, newest_page
from bridge.forget_exchange import forget_exchange
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.workspace_client import serving_team
from layers.episodic.episode import FEEDBACK_NAMES, Episode, Hit
from layers.episodic.episode_filter import EpisodeFilter
from layers.episodic.recall_uses import RecallUse
from layers.episodic.states import LIVE, EpisodeState
from layers.shared.errors import BadInput
from layers.shared.places import LOCAL_TEAM, Place, Viewer

log = logging.getLogger(__name__)

# What the audit log calls each change of a memory's state.
STATE_ACTIONS = {"live": "resume", "paused": "pause", "archived": "archive"}
FEEDBACK_BY_NAME = {name: feedback for feedback, name in FEEDBACK_NAMES.items() if name}
NOTHING_NARROWED = EpisodeFilter()
# How deep a search pages (recall ranks this many pages' worth; past it, narrow it).
MOST_PAGES = 10


async def viewer_of(parts: ConsoleDependencies, user: SignedInPerson) -> Viewer:
    """What the person may read, by the rule every turn follows: a member sees what they
    would in a DM with Thoth — their own DMs and the public channels of their workspace —
    and the private channels, group DMs and channels shared across their Enterprise Grid
    org that Slack says they are in."""
    if user.sees_everything or user.team is None or user.user is None:
        return Viewer(sees_everything=user.sees_everything)
    memberships = await parts.memberships.of(user.team, user.user)
    return memberships.viewer(user.team, "console", user.user)


def seen_as(user: SignedInPerson, view_as: str) -> SignedInPerson:
    """``user``, or for a founder asking "view as TEAM:USER", that member as they would
    sign in: the preview proves what someone else would see, by the same rule."""
    team, _, person = view_as.strip().partition(":")
    if not (user.founder and team and person):
        return user
    return SignedInPerson(f"slack:{person}", person, sees_everything=False, founder=False,
                       team=team, user=person)


def filter_of(query: Mapping[str, str], *, channel: str | None = None) -> EpisodeFilter:
    """The page's filters from its query string (``BadInput`` naming a bad one);
    ``channel``: the id of the channel it names, where it names one by its name."""
    feedback = query.get("feedback", "")
    if feedback and feedback not in FEEDBACK_BY_NAME:
        raise BadInput(f"feedback is one of {', '.join(FEEDBACK_BY_NAME)}")
    return EpisodeFilter(
        channel=channel or query.get("channel", "").strip() or None,
        said_by=query.get("person", "").strip().lower() or None,
        since=_day(query.get("since", ""), "since"),
        until=_day(query.get("until", ""), "until", end=True),
        feedback=FEEDBACK_BY_NAME.get(feedback))


@dataclass(frozen=True)
class Listed:
    """A page of episodes, and where the next one starts (None: this is the last)."""

    hits: list[Hit]
    # Browsing: the newest-first cursor after this page's last episode ("TIME:ID").
    older: str | None = None
    # Searching: the number of the next page of matches.
    next_page: int | None = None


async def search(parts: ConsoleDependencies, user: SignedInPerson, query: str,
                 narrowed: EpisodeFilter = NOTHING_NARROWED, *, older: str = "",
                 page: int = 1) -> Listed:
    """Recall's best matches the person may see, narrowed, a page at a time (``page``);
    with no words, everything they may see, newest first, from ``older`` on."""
    viewer = await viewer_of(parts, user)
    if not query.strip():
        cursor = cursor_of(older, of="episodes")
        latest = await parts.stores.run(lambda stores: stores.episodic.store.recent(
            viewer, narrowed, parts.results + 1, older_than=cursor))
        newest, older_on = newest_page(latest, parts.results)
        return Listed([Hit(episode, 0.0) for episode in newest], older=older_on)
    if not 1 <= page <= MOST_PAGES:
        raise BadInput(f"page is a number from 1 to {MOST_PAGES}")
    # Recall ranks first and the filters narrow its best few. Always asked as deep
    # (recall's order depends on how many it is asked for, and each page must go on
    # from the last), and deeper than shown, so a narrow filter still fills a page.
    hits = await parts.stores.run(lambda stores: stores.episodic.recall(
        query, viewer, k=parts.results * MOST_PAGES))
    admitted = [hit for hit in hits if narrowed.admits(hit.episode)]
    shown = admitted[(page - 1) * parts.results: page * parts.results]
    more = len(admitted) > page * parts.results and page < MOST_PAGES
    return Listed(shown, next_page=page + 1 if more else None)


@dataclass(frozen=True)
class EpisodePage:
    episode: Episode
    permalink: str | None
    # Who recalled it: turns, MCP clients, the console (places shown to those who see
    # everything).
    uses: list[RecallUse]
    # Live, paused or archived, by whom and when.
    state: EpisodeState = LIVE


async def page_of(parts: ConsoleDependencies, user: SignedInPerson,
                  episode_id: str) -> EpisodePage | None:
    """One episode with its provenance, or None when the person may not see it."""
    viewer = await viewer_of(parts, user)

    def read(stores: ConsoleStores) -> EpisodePage | None:
        visible = stores.episodic.store.get_visible(episode_id, viewer)
        if visible is None:
            return None
        # Its files' names, kinds, sizes, types and permalinks are its provenance too.
        episode = stores.episodic.store.with_files(visible)
        shown = EpisodePage(episode, None, stores.episodic.uses.of(episode_id),
                            stores.episodic.states.of([episode_id]).get(episode_id, LIVE))
        # Opened in the console: in its access log, as a turn's or a client's recall is.
        stores.episodic.uses.record([episode_id], RecallUse(
            "console", Place(user.team or LOCAL_TEAM, "console", "im"),
            user.user or user.name, time.time(), via="console"))
        return shown

    found = await parts.stores.run(read)
    if found is None:
        return None
    return replace(found, permalink=await _permalink(parts, found.episode))


async def states_of(parts: ConsoleDependencies, hits: list[Hit]) -> dict[str, EpisodeState]:
    """The paused and archived among ``hits``."""
    ids = [hit.episode.id for hit in hits]
    return await parts.stores.run(lambda stores: stores.episodic.states.of(ids))


async def set_state(parts: ConsoleDependencies, user: SignedInPerson, episode_id: str,
                    state: str, origin: str) -> bool:
    """Pause, archive or resume a memory; False when it is not there or not theirs."""

    def change(stores: ConsoleStores) -> bool:
        episode = stores.episodic.store.get(episode_id)
        if episode is None or not may_forget(user, episode):
            return False
        if not stores.episodic.states.set(episode_id, state, by=user.name):
            return False
        stores.audit.record(actor=user.actor, action=f"episode.{STATE_ACTIONS[state]}",
                            target=f"episode:{episode_id}", origin=origin)
        return True

    return await parts.stores.run(change)


async def _permalink(parts: ConsoleDependencies, episode: Episode) -> str | None:
    """The Slack thread the episode was said in (None for a local one, or without Slack)."""
    if parts.slack is None or not episode.thread_ts or episode.team == LOCAL_TEAM:
        return None
    try:
        async with serving_team(parts.workspace_of, episode.team) as installed:
            if not installed:
                return None
            response = await parts.slack.chat_getPermalink(channel=episode.channel,
                                                           message_ts=episode.thread_ts)
    except SLACK_FAILURES as error:
        log.info("no permalink for episode %s: %s", episode.id, type(error).__name__)
        return None
    return str(response.get("permalink") or "") or None


def _day(text: str, name: str, *, end: bool = False) -> float | None:
    """A YYYY-MM-DD day as seconds since the epoch (UTC); ``end``: the day after it."""
    if not text.strip():
        return None
    try:
        day = datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=UTC)
        return (day + timedelta(days=1) if end else day).timestamp()
    except (ValueError, OverflowError) as error:
        raise BadInput(f"{name} is a day as YYYY-MM-DD, not {text.strip()[:40]!r}") from error


def may_forget(user: SignedInPerson, episode: Episode) -> bool:
    return user.sees_everything or (
        episode.user is not None and (episode.team, episode.user) == (user.team, user.user))


async def forget(parts: ConsoleDependencies, user: SignedInPerson, episode_id: str,
                 origin: str) -> bool:
    """Forget one episode; False when it is not there or not theirs to forget."""

    def change(stores: ConsoleStores) -> bool:
        episode = stores.episodic.store.get(episode_id)
        if episode is None or not may_forget(user, episode):
            return False
        return forget_exchange(stores, episode_id, actor=user.actor, who=user.name,
                               origin=origin)

    return await parts.stores.run(change)
