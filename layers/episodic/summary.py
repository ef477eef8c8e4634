"""An extractive summary of a reply: what an episode keeps of the agent's answer.

No model call: the first sentences of the reply, with Markdown stripped, up to a
length that embeds well and reads well in a `<related-episodes>` line.
"""

from __future__ import annotations

import re

SUMMARY_CHARS = 300

_CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")
_MARKUP = re.compile(r"(^|\s)[#>*\-+]+\s+|[*`~]+|(?<!\w)_+|_+(?!\w)", re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def summarize_reply(reply: str, limit: int = SUMMARY_CHARS) -> str:
    """The reply's leading sentences as plain text, at most ``limit`` characters."""
    text = _CODE_BLOCK.sub(" [code] ", reply)
    text = _LINK.sub(r"\1", text)
    text = _MARKUP.sub(" ", text)
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    summary = ""
    for sentence in _SENTENCE_END.split(text):
        candidate = f"{summary} {sentence}".strip()
        if len(candidate) > limit:
            break
        summary = candidate
    if summary:
        return summary
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"
