"""The episode record, and a recalled one with its score."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import IntEnum

from layers.shared.places import LOCAL_CHANNEL, LOCAL_TEAM, ChannelType


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
class EpisodeFile:
    """A file shared with the turn, as memory keeps it: never its bytes (issue 50)."""

    name: str
    # image | pdf | text, or other: named, not read.
    kind: str
    size: int = 0
    mimetype: str | None = None
    # Where people open it again (Slack's permalink; None for a file from the terminal).
    permalink: str | None = None
    # What memory keeps of its content, searched as the episode's own words: a PDF's
    # text, a text file as the model saw it, an image's description once a turn has seen
    # it; '' for none.
    extract: str = ""
    # Why it was not read, for one that was not.
    unread: str | None = None


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
    # Stored in a table of their own (``episode_files``), their extracts searched with
    # the episode's words (episodic migration 9); loaded where they are shown.
    files: tuple[EpisodeFile, ...] = ()


# Fields kept apart from the episodes table's row.
STORED_APART = frozenset({"files"})
# The record's fields, in order: the store's columns and the JSON line's keys are these
# names (layers/episodic/store.py, jsonl.py), so a new one is a migration and a field.
EPISODE_FIELDS: tuple[str, ...] = tuple(
    field.name for field in fields(Episode) if field.name not in STORED_APART)


@dataclass(frozen=True)
class Hit:
    """One recalled episode and its fused score (higher is better)."""

    episode: Episode
    score: float
    # The files of the episode, each with the passage of its extract nearest the query.
    files: tuple[RecalledFile, ...] = ()


@dataclass(frozen=True)
class RecalledFile:
    """A file of a recalled episode: what it is, and the part of it the query is about."""

    name: str
    kind: str
    permalink: str | None
    passage: str
    # The type it was sent as (Slack's mimetype; None from the terminal).
    mimetype: str | None = None


# Slack refuses messages longer than this, so a longer episode cannot be a real turn.
MAX_TEXT_CHARS = 40_000
