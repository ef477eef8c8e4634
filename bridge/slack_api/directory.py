"""Names for ids (users.info, conversations.info), cached: the `<slack-context>` block.

Used on one event loop only (the turns'), so its caches need no lock.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.clients import SLACK_FAILURES
from layers.shared.places import ChannelType

log = logging.getLogger(__name__)

CACHE_SECONDS = 3_600.0
# Who is in a channel decides what they may recall: asked again after a few minutes.
MEMBERSHIP_CACHE_SECONDS = 300.0
Info = TypeVar("Info")


@dataclass(frozen=True)
class ChannelInfo:
    id: str
    name: str | None
    channel_type: ChannelType
    # Shared with another organisation (Slack Connect), or on its way to be.
    external: bool = False
    # Shared across workspaces of one Enterprise Grid organisation (``is_org_shared``).
    org_shared: bool = False


@dataclass(frozen=True)
class UserInfo:
    id: str
    name: str | None
    is_bot: bool
    # A guest (multi- or single-channel: is_restricted / is_ultra_restricted).
    guest: bool = False
    # Their own workspace (team_id); None when Slack did not say.
    team: str | None = None
    # False when users.info failed: who they are is not known.
    known: bool = True
    # Their time zone as Slack has it ("Europe/London"): the dates they name are days there.
    tz: str | None = None
    # Deactivated in Slack.
    deleted: bool = False


class Directory:
    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._users: dict[str, tuple[float, UserInfo]] = {}
        self._channels: dict[str, tuple[float, ChannelInfo]] = {}
        self._members: dict[str, tuple[float, bool]] = {}

    async def user(self, user_id: str) -> UserInfo:
        cached = self._cached(self._users, user_id)
        if cached is not None:
            return cached
        try:
            data = (await self._client.users_info(user=user_id)).get("user") or {}
            info = UserInfo(
                user_id, user_name(data), bool(data.get("is_bot")),
                guest=bool(data.get("is_restricted") or data.get("is_ultra_restricted")),
                team=data.get("team_id") or None, tz=data.get("tz") or None,
                deleted=bool(data.get("deleted")),
            )
        except SLACK_FAILURES as error:
            log.warning("users.info %s failed: %r", user_id, error)
            # Not cached: asked again next time.
            return UserInfo(user_id, None, False, known=False)
        self._users[user_id] = (time.monotonic(), info)
        return info

    async def channel(
        self, channel_id: str, event_channel_type: str | None = None
    ) -> ChannelInfo:
        cached = self._cached(self._channels, channel_id)
        if cached is not None:
            return cached
        try:
            response = await self._client.conversations_info(channel=channel_id)
            info = channel_info(channel_id, response.get("channel") or {})
        except SLACK_FAILURES as error:
            log.warning("conversations.info %s failed: %r", channel_id, error)
            # Without Slack's answer, err on the private side: never widen who may recall
            # (nor who reads the answer: it may be a channel shared with outsiders).
            return ChannelInfo(channel_id, None, _kind_from_event(channel_id, event_channel_type),
                               external=True)
        self._channels[channel_id] = (time.monotonic(), info)
        return info

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        """Whether ``user_id`` is in the channel now (cached briefly); False when unknown."""
        key = f"{channel_id}:{user_id}"
        cached = self._cached(self._members, key, MEMBERSHIP_CACHE_SECONDS)
        if cached is not None:
            return cached
        found = False
        try:
            first = await self._client.conversations_members(channel=channel_id, limit=1000)
            async for page in first:
                if user_id in (page.get("members") or []):
                    found = True
                    break
        except SLACK_FAILURES as error:
            log.warning("conversations.members %s failed: %s", channel_id, error)
            return False  # unknown: never widen who may recall
        self._members[key] = (time.monotonic(), found)
        return found

    def _cached(
        self, table: dict[str, tuple[float, Info]], key: str, ttl: float = CACHE_SECONDS
    ) -> Info | None:
        entry = table.get(key)
        if entry is None or time.monotonic() - entry[0] > ttl:
            return None
        return entry[1]


def user_name(user: dict[str, Any]) -> str | None:
    """What Thoth calls a person (``users.info``'s user): their display name, else their
    real name, else their handle."""
    profile = user.get("profile") or {}
    return profile.get("display_name") or profile.get("real_name") or user.get("name") or None


def channel_info(channel_id: str, channel: dict[str, Any]) -> ChannelInfo:
    """What Thoth keeps of ``conversations.info``'s channel."""
    return ChannelInfo(channel_id, channel.get("name"), channel_kind(channel),
                       _external(channel), org_shared=_org_shared(channel))


def channel_kind(channel: dict[str, object]) -> ChannelType:
    """A conversation's type as places name it (``conversations.info``'s channel)."""
    if channel.get("is_im"):
        return "im"
    if channel.get("is_mpim"):
        return "mpim"
    if channel.get("is_private") or channel.get("is_group"):
        return "private"
    return "public"


def _external(channel: dict[str, object]) -> bool:
    """Shared with another organisation: Slack Connect, pending or made. A channel shared
    between the workspaces of one Enterprise Grid organisation (is_org_shared) is not."""
    return bool(
        channel.get("is_ext_shared") or channel.get("is_pending_ext_shared")
        or (channel.get("is_shared") and not channel.get("is_org_shared"))
    )


def _org_shared(channel: dict[str, object]) -> bool:
    """Shared across workspaces of one Enterprise Grid organisation, and with no one
    outside it."""
    return bool(channel.get("is_org_shared")) and not _external(channel)


def place_team(channel: ChannelInfo, team: str, enterprise: str | None) -> str:
    """Whose memory what is said in ``channel`` is: the org's for a channel shared across
    its workspaces, else the workspace's (``team``).

    Decided (DESIGN.md, "Memory must never leak"): a channel shared across the workspaces
    of one Enterprise Grid org is one place, whichever workspace a person writes from, so
    its memory is kept under the org's id rather than split by the workspace each event
    names. Its readers come from several workspaces, so each is confined to the
    channel's own memory (``confined_reader``): what a workspace keeps elsewhere never
    reaches people of another, and the channel's memory reaches no other channel.
    """
    return enterprise if channel.org_shared and enterprise else team


def confined_reader(channel: ChannelInfo, user: UserInfo, team: str,
                    user_team: str | None = None) -> bool:
    """Whether a reader here sees only this channel's own memory: a channel shared with
    another organisation or across an Enterprise Grid org's workspaces, a guest, a
    person of another workspace (the event's ``user_team`` or their users.info
    ``team_id``), or someone Slack could not tell us about (never widen on a guess)."""
    return (
        channel.external or channel.org_shared or user.guest or not user.known
        or (user.team is not None and user.team != team)
        or (user_team is not None and user_team != team)
    )


def _kind_from_event(channel_id: str, event_channel_type: str | None) -> ChannelType:
    mapped: dict[str, ChannelType] = {
        "im": "im",
        "mpim": "mpim",
        "group": "private",
        "channel": "public",
    }
    if event_channel_type in mapped:
        return mapped[event_channel_type]
    return "im" if channel_id.startswith("D") else "private"
