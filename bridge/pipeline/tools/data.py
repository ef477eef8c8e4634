"""How a tool's data, read by a program (over MCP), says when and where something was."""

from __future__ import annotations

from datetime import UTC, datetime

from bridge.pipeline.episodes_block import where_said


def when(moment: float) -> str:
    """A moment as ISO 8601, in UTC to the second."""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def place_said(channel_type: str, channel: str) -> str:
    """A place as the asker knows it. The only DMs anyone may read or write through a
    tool are their own with Thoth: say so."""
    return "a DM with Thoth" if channel_type == "im" else where_said(channel_type, channel)
