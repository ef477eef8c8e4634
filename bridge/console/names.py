"""Names people know for the ids the console would otherwise show: "#general" for C01…,
"Dana" for U01….

A channel's name and a person's are asked of Slack's directory (``conversations.info``,
``users.info``, cached for an hour by ``Directory``), through the install of the
episode's workspace; a person's, else, is the name Thoth kept with what they said. Where
neither is known, the page says what kind of place it was ("a private channel") and
keeps the id for the detail line. Slack failing costs a name, never the page.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import Directory
from bridge.slack_api.workspace_client import WorkspaceOf, serving_team
from layers.episodic.episode import Episode
from layers.shared.errors import ThothError
from layers.shared.places import LOCAL_TEAM

log = logging.getLogger(__name__)

# How long a workspace's list of channels serves filters that name one.
LISTED_FOR_S = 3_600.0
# How long what Slack could not name goes unasked.
UNNAMED_FOR_S = 300.0
# What a place is called where its name is not known, by its type.
KINDS = {"im": "a DM with Thoth", "mpim": "a group DM", "private": "a private channel",
         "public": "a channel"}


@dataclass(frozen=True)
class Named:
    """The names of one page's places and people (``Names.of``), for its template."""

    channels: dict[tuple[str, str], str] = field(default_factory=dict)
    people: dict[tuple[str, str], str] = field(default_factory=dict)

    def channel(self, episode: Episode) -> str:
        return self.channels.get((episode.team, episode.channel)) or _kind(episode)

    def person(self, episode: Episode) -> str:
        if episode.user is None:
            return episode.user_name or "someone"
        return (self.people.get((episode.team, episode.user)) or episode.user_name
                or "someone")


class Names:
    def __init__(self, slack: AsyncWebClient | None,
                 workspace_of: WorkspaceOf | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # One directory for the console's one event loop: its caches need no lock.
        self._client = slack
        self._directory = None if slack is None else Directory(slack)
        # Each workspace's channels by name, for a filter that names one (and when).
        self._listed: dict[str, tuple[float, dict[str, str]]] = {}
        self._workspace_of = workspace_of
        # What Slack could not name (a deleted channel, a person gone), and when: not
        # asked again on every page for a while (the directory caches only answers).
        self._unnamed: dict[tuple[str, str], float] = {}
        self._clock = clock

    async def of(self, episodes: Iterable[Episode]) -> Named:
        """The names of the places and people of ``episodes``: each workspace's asked of
        Slack at once (a cold page asks for up to forty names), one workspace after
        another (each through its own install)."""
        named = Named()
        if self._directory is None:
            return named
        wanted: dict[str, tuple[set[tuple[str, str]], set[str]]] = {}
        for episode in episodes:
            if episode.team == LOCAL_TEAM:
                continue
            channels, people = wanted.setdefault(episode.team, (set(), set()))
            if episode.channel_type != "im" and self._may_ask(("c", episode.channel)):
                channels.add((episode.channel, episode.channel_type))
            if episode.user and self._may_ask(("u", episode.user)):
                people.add(episode.user)
        for team, (channels, people) in wanted.items():
            try:
                await self._name(named, team, channels, people)
            except (*SLACK_FAILURES, ThothError) as error:
                # The install could not be found or asked: names lost, never the page.
                log.warning("no names for workspace %s: %s", team, type(error).__name__)
        return named

    async def _name(self, named: Named, team: str, channels: set[tuple[str, str]],
                    people: set[str]) -> None:
        """Ask the directory, through ``team``'s install, for these channels and people."""
        directory = self._directory
        assert directory is not None

        async def channel(channel_id: str, channel_type: str) -> None:
            info = await directory.channel(channel_id, channel_type)
            if info.name:
                named.channels[(team, channel_id)] = _channel_name(info.name, channel_type)
            else:
                self._unnamed[("c", channel_id)] = self._clock()

        async def person(user: str) -> None:
            info = await directory.user(user)
            if info.name:
                named.people[(team, user)] = info.name
            else:
                self._unnamed[("u", user)] = self._clock()

        async with serving_team(self._workspace_of, team) as installed:
            if installed:
                # Tasks made here keep the workspace being served (a context variable).
                await asyncio.gather(*(channel(*wanted) for wanted in sorted(channels)),
                                     *(person(user) for user in sorted(people)))

    async def channel_named(self, team: str | None, asked: str) -> str:
        """The id of the channel ``asked`` names ("#general", "general"), for a filter;
        ``asked`` itself (without its "#") when it names none Slack lists, as an id does.
        ``team``: whose workspace (None: the one bot token's)."""
        name = asked.strip().removeprefix("#")
        if self._directory is None or not name or (team is None
                                                   and self._workspace_of is not None):
            return name
        named = self._listed.get(team or "")
        if named is None or self._clock() - named[0] > LISTED_FOR_S:
            listed = await self._channels_of(team)
            if listed is None:
                return name  # Slack did not answer: asked again next time
            named = (self._clock(), listed)
            self._listed[team or ""] = named
        return named[1].get(name.lower(), name)

    async def _channels_of(self, team: str | None) -> dict[str, str] | None:
        """The workspace's channels the bot may see, by their names (lower case); None
        when Slack could not be asked."""
        found: dict[str, str] = {}
        assert self._client is not None
        try:
            async with serving_team(self._workspace_of, team or "") as installed:
                if not installed:
                    return found
                first = await self._client.conversations_list(
                    types="public_channel,private_channel", exclude_archived=True,
                    limit=999)
                async for page in first:
                    for channel in page.get("channels") or []:
                        if channel.get("name"):
                            found[str(channel["name"]).lower()] = str(channel["id"])
        except SLACK_FAILURES as error:
            log.warning("conversations.list failed: %s", type(error).__name__)
            return None
        return found

    def _may_ask(self, key: tuple[str, str]) -> bool:
        missed = self._unnamed.get(key)
        return missed is None or self._clock() - missed > UNNAMED_FOR_S


def _channel_name(name: str, channel_type: str) -> str:
    if channel_type == "mpim":
        return "a group DM"  # Slack's name for one is a list of handles: no one's word
    return f"🔒 {name}" if channel_type == "private" else f"#{name}"


def _kind(episode: Episode) -> str:
    if episode.team == LOCAL_TEAM:
        # No Slack to ask: the terminal, or a channel known only by what it was imported as.
        return "the terminal" if episode.channel_type == "im" else f"#{episode.channel}"
    return KINDS.get(episode.channel_type, "a channel")
