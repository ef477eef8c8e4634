"""Recalled episodes as text: the `<related-episodes>` block, tool results, offline replies."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from layers.episodic.episode import Episode, Hit

MESSAGE_CHARS = 400


def episode_line(episode: Episode) -> str:
    """One dated line: when, where, who, what they said and what the reply was."""
    day = datetime.fromtimestamp(episode.created_at, UTC).date().isoformat()
    where = where_said(episode.channel_type, episode.channel)
    who = episode.user_name or episode.user or "someone"
    said = _clip(episode.user_text)
    line = f"- {day}, {where}, {who}: {said}"
    if episode.summary:
        line += f"\n  reply: {_clip(episode.summary)}"
    return line


def where_said(channel_type: str, channel: str) -> str:
    """A place as a remembered line names it: "a DM", "a group DM" or "#channel"."""
    return {"im": "a DM", "mpim": "a group DM"}.get(channel_type, f"#{channel}")


def episodes_text(hits: Sequence[Hit]) -> str:
    return "\n".join(episode_line(hit.episode) for hit in hits)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MESSAGE_CHARS else flat[: MESSAGE_CHARS - 1] + "…"
