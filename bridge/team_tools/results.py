"""What a team's tool answered, as the model reads it: quoted, capped, never stored raw."""

from __future__ import annotations

import json

import mcp_types as types

# Characters of a tool's result the model reads; past them, the head and a note.
RESULT_CHARS = 20_000


def result_text(result: types.CallToolResult) -> str:
    """A tool's answer as text, cut at ``RESULT_CHARS`` with a note of what was cut."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            parts.append(f"[an image, {block.mime_type}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) <= RESULT_CHARS:
        return text
    return (f"{text[:RESULT_CHARS]}\n[… {len(text) - RESULT_CHARS:,} more characters cut:"
            " ask for less]")
