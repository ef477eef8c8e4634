"""The episode record and the viewer it is recalled for."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

ChannelType = Literal["im", "public", "private", "mpim"]
CHANNEL_TYPES: tuple[ChannelType, ...] = ("im", "public", "private", "mpim")

# Where an episode said nowhere in particular lives: the "public local channel".
LOCAL_TEAM = "local"
LOCAL_CHANNEL = "local"
# Where `thoth chat` talks: a DM of the local workspace with the person at the terminal.
TERMINAL_CHANNEL = "terminal"


class Feedback(IntEnum):
    """What humans said of the reply with ✅ / ❌ reactions."""

    DID_NOT_WORK = -1
    NONE = 0
    WORKED = 1


FEEDBACK_NAMES: dict[Feedback, str | None] = {
    Feedback.DID_NOT_WORK: "did_not_work",
    Feedback.NONE: None,
    Feedback.WORKED: "worked",
}


@dataclass(frozen=True)
class Episode:
    """The stored record of one successful turn (already redacted)."""

    id: str
    user_text: str
    summary: str
    created_at: float  # seconds since the epoch, UTC
    team: str = LOCAL_TEAM
    channel: str = LOCAL_CHANNEL
    channel_type: ChannelType = "public"
    thread_ts: str | None = None
    user: str | None = None
    # The speaker's display name: recall finds "what did Dana say about..." by it.
    user_name: str | None = None
    session_id: str | None = None
    cost_usd: float = 0.0
    feedback: Feedback = Feedback.NONE
    reply_model: str | None = None


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


@dataclass(frozen=True)
class Hit:
    """One recalled episode and its fused score (higher is better)."""

    episode: Episode
    score: float


# Slack refuses messages longer than this, so a longer episode cannot be a real turn.
MAX_TEXT_CHARS = 40_000
