"""Where things are said and who reads them: the vocabulary every memory layer shares.

Slack's coordinates (a workspace, a channel of some type, a thread) name a place; a
viewer is who is asking, and from where. Recall, identity and notes all follow one rule
about which places a viewer may read (DESIGN.md, "Memory must never leak"); each layer
applies it to its own storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

ChannelType = Literal["im", "public", "private", "mpim"]
CHANNEL_TYPES: tuple[ChannelType, ...] = ("im", "public", "private", "mpim")

# Where something said nowhere in particular lives: a public channel of the local workspace.
LOCAL_TEAM = "local"
LOCAL_CHANNEL = "local"
# Where `thoth chat` talks: a DM of the local workspace with the person at the terminal.
TERMINAL_CHANNEL = "terminal"


@dataclass(frozen=True)
class Place:
    """Where a conversation happens, in Slack's coordinates (a terminal is a local DM)."""

    team: str = LOCAL_TEAM
    channel: str = LOCAL_CHANNEL
    channel_type: ChannelType = "public"
    thread_ts: str | None = None
    channel_name: str | None = None


# What a list of places (mcp.json's ``places``, WEB_TOOLS_PLACES) may name beside
# channel ids: the kinds of place.
PLACE_KINDS = ("public", "private", "im", "mpim")


def listed_in(places: Sequence[str] | None, place: Place) -> bool:
    """Whether a list of places allows ``place``: its kind or its channel is listed (no
    list: everywhere)."""
    return places is None or place.channel_type in places or place.channel in places


@dataclass(frozen=True)
class Viewer:
    """Who is asking, and from where: recall returns only what they could have read."""

    team: str = LOCAL_TEAM
    channel: str = LOCAL_CHANNEL
    channel_type: ChannelType = "public"
    user: str | None = None
    # The operator's view (`thoth recall --all`): every episode stored, in every place
    # and workspace. Only the command line of the machine that holds THOTH_HOME asks
    # with it; no turn does.
    sees_everything: bool = False
    # A reader who sees only this channel's own memory (a DM: only their own): someone of
    # another organisation, a guest, or anyone in a channel shared with another
    # organisation (Slack Connect). Nothing from elsewhere in the workspace reaches them.
    confined: bool = False
    # The private channels and group DMs the viewer is a member of besides the one they
    # ask from: a private channel's memory is its members', wherever they read it. Only
    # the console's person view has such a set (asked of Slack, `users.conversations`);
    # a turn reads its own channel's only.
    member_of: frozenset[str] = frozenset()
    # The viewer's Enterprise Grid org, and the channels shared across its workspaces that
    # they are a member of: such a channel's memory is the org's (kept under ``org``), and
    # is read by its members from whichever workspace. Only the console's and MCP's person
    # view has them; a turn in such a channel is confined to it.
    org: str | None = None
    org_channels: frozenset[str] = frozenset()

    def private_channels(self) -> frozenset[str]:
        """The private channels and group DMs whose memory this viewer may read."""
        return self.member_of | {self.channel}
