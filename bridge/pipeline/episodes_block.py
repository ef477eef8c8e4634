"""Recalled episodes as text: the `<related-episodes>` block, tool results, offline replies."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from layers.episodic.episode import Episode, Hit

MESSAGE_CHARS = 400
# Of a recalled file, the passage the question is about (file_passages.py), this long.
PASSAGE_CHARS = 900


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
    return "\n".join(hit_lines(hit) for hit in hits)


def hit_lines(hit: Hit) -> str:
    """A recalled episode's line, and a line for each file shared with it: its name, its
    kind, and the passage of it the question is about."""
    lines = [episode_line(hit.episode)]
    for file in hit.files:
        passage = _clip(file.passage, PASSAGE_CHARS)
        lines.append(f"  shared {file.name} ({file.kind})" + (f": {passage}" if passage else ""))
    return "\n".join(lines)


def _clip(text: str, most: int = MESSAGE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"
