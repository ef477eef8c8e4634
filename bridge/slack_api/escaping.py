"""Every text Thoth posts to Slack is redacted and escaped here, and cut to Slack's limits.

Redacted: a secret never reaches Slack, whatever produced the text (a reply is
redacted as it streams; remembered text was redacted when stored, possibly before a
pattern existed; an error may quote what a person typed).

Slack reads ``&``, ``<`` and ``>`` as control characters (``<!channel>``, ``<@U1>``,
``<https://x|link>``) in every text field, so text from the model, from memory,
from skill drafts or from people is escaped before it goes out; only markup Thoth
builds itself (``mention``, the permalinks of ``/recall``) stays live, and a Markdown
link in such text is shown as its words and its address, so a remembered
``[open the thread](https://evil…)`` cannot pass for Thoth's own link. Decided:
``markdown_text`` and ``markdown`` blocks are escaped too, code included. Slack's
reference does not say whether Slack's markdown turns ``<!here>`` into a ping, and a
remembered word must never ping a channel; at worst a ``<`` inside code shows as an
entity.

Replies use Slack's own Markdown (``markdown_text``, ``markdown`` blocks: 12 000
characters per call) rather than a hand-written Markdown-to-mrkdwn converter.
"""

from __future__ import annotations

import re

from layers.shared.quoting import quoted
from layers.shared.redaction import redact

# markdown_text (postMessage, update, postEphemeral, the stream methods) and the
# markdown blocks of one message: "Limit this field to 12,000 characters".
MARKDOWN_CHARS = 12_000
# A section block's text: at most 3,000 characters.
SECTION_CHARS = 3_000
_ENTITY_TAIL = re.compile(r"&[a-z]{0,4}$")
# A Markdown link: its words can claim to be anything ("open the thread"). The address
# may hold balanced parentheses (Wikipedia's) or angle brackets, and a title may follow.
_LINK = re.compile(
    r"\[([^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*)\]"
    r"\(\s*<?((?:[^()\s<>]|\([^()\s]*\))+)>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
# A reference link's definition ("[1]: https://…") and its use ("[words][1]").
_LINK_DEFINITION = re.compile(r"^( {0,3})\[([^\]\n]+)\]:[ \t]*", re.MULTILINE)
_REFERENCE = re.compile(r"\]\[")


def escape(text: str) -> str:
    """``text`` redacted, its Markdown links shown as words and address, then ``&``,
    ``<`` and ``>`` as the entities Slack decodes."""
    return quoted(inert_links(redact(text)))


def inert_links(text: str) -> str:
    """``[words](address)`` as ``words (address)``: only links Thoth builds itself stay
    links with words of their own; a remembered or model-written one shows where it
    goes (Slack still makes the bare address clickable). Whole lines reach here (the
    reply's stream releases text a line at a time), and a link never spans lines."""
    inline = _LINK.sub(
        lambda m: m.group(2) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})",
        text,
    )
    return _REFERENCE.sub("] [", _LINK_DEFINITION.sub(r"\1\2: ", inline))


def mention(user_id: str) -> str:
    """A live mention of a person, built by Thoth (never from remembered text)."""
    return f"<@{user_id}>"


def split_message(text: str, limit: int = MARKDOWN_CHARS) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at paragraphs, then lines, then words.

    A code block cut in two is closed at the end of one piece and reopened in the next;
    an escaped entity is never cut in half.
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


def escaped_pieces(text: str, limit: int = MARKDOWN_CHARS) -> list[str]:
    """``text`` escaped, then split to ``limit`` (so the limit holds for what is sent)."""
    return split_message(escape(text), limit)


def preview(escaped: str, chars: int) -> str:
    """The start of an escaped text, never ending inside an entity."""
    if len(escaped) <= chars:
        return escaped or "…"
    head = escaped[:chars]
    tail = _ENTITY_TAIL.search(head)
    return (head[: tail.start()] if tail else head) + "…"


def _cut_point(text: str, limit: int) -> int:
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, 0, limit)
        if at > limit // 2:
            return at
    tail = _ENTITY_TAIL.search(text[:limit])
    return tail.start() if tail else limit
