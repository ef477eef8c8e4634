"""Model Markdown to Slack mrkdwn, and long replies split within Slack's limits."""

from __future__ import annotations

import re

# Slack truncates a message's text past 40 000 characters and renders long ones
# badly; a section of a few thousand reads well and stays under every limit.
MESSAGE_CHARS = 3_900

_FENCE = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE), "\x00\\1\x00"),
    (re.compile(r"\*\*(.+?)\*\*"), "\x00\\1\x00"),
    (re.compile(r"__(.+?)__"), "\x00\\1\x00"),
    (re.compile(r"(?<![*\w])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![*\w])"), r"_\1_"),
    (re.compile(r"~~(.+?)~~"), r"~\1~"),
    (re.compile(r"!?\[([^\]]+)\]\((\S+?)\)"), r"<\2|\1>"),
    (re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE), r"\1• "),
)


def to_mrkdwn(markdown: str) -> str:
    """Convert outside code spans and blocks, which Slack shows as they are."""
    parts = _FENCE.split(markdown)
    for index in range(0, len(parts), 2):
        text = parts[index]
        for pattern, replacement in _RULES:
            text = pattern.sub(replacement, text)
        # Bold was parked on NUL so the italic rule could not eat its asterisks.
        parts[index] = text.replace("\x00", "*")
    return "".join(parts)


def split_message(text: str, limit: int = MESSAGE_CHARS) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at paragraphs, then lines, then words.

    A code block cut in two is closed at the end of one piece and reopened in the next.
    """
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_point(rest, limit - 4)
        head, rest = rest[:cut].rstrip(), rest[cut:].lstrip("\n")
        if head.count("```") % 2:
            head += "\n```"
            rest = "```\n" + rest
        pieces.append(head)
    if rest:
        pieces.append(rest)
    return pieces


def _cut_point(text: str, limit: int) -> int:
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, 0, limit)
        if at > limit // 2:
            return at
    return limit
