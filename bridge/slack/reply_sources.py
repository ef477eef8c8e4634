"""The web pages a reply rests on, as links under it: a Block Kit ``context`` block.

Decided: one line, "Sources: <url|title> · <url|title>", in a context block between the
reply and its feedback buttons, so it reads as a footnote of the reply and not as more of
its words. The links are Thoth's own markup (``bridge/slack_api/escaping.py``): a title is
redacted and escaped, shortened, and cannot close the link; an address is used only when it
is http(s), with the characters that would end Slack's link escaped or percent-encoded.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import Any

from bridge import messages
from bridge.model.protocol import Source
from bridge.slack_api.escaping import escape
from layers.shared.redaction import redact

# A context element's text holds 3 000 characters: five links of these sizes fit.
TITLE_CHARS = 80
URL_CHARS = 450
SEPARATOR = " · "


def sources_block(sources: Sequence[Source]) -> dict[str, Any] | None:
    """The links under a reply, or None when it rests on no page that can be linked."""
    links = [link for link in (_link(source) for source in sources) if link]
    if not links:
        return None
    return {"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"{messages.SOURCES}: " + SEPARATOR.join(links)}]}


def _link(source: Source) -> str | None:
    # A secret in an address (a key in its query) never goes out either.
    url = redact(source.url.strip())
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > URL_CHARS:
        return None
    # "|" and ">" would end the address, "<" and spaces are not in one: percent-encoded;
    # "&" is the one character Slack wants as its entity inside a link too.
    address = "".join(_ADDRESS_ESCAPES.get(char, char) for char in url)
    title = " ".join(source.title.split()) or parts.netloc
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1].rstrip() + "…"
    # Redacted and escaped like every text Thoth posts: a ">" in the words would end the link.
    return f"<{address}|{escape(title)}>"


_ADDRESS_ESCAPES = {"&": "&amp;", "<": "%3C", ">": "%3E", "|": "%7C", " ": "%20",
                    "\n": "", "\r": "", "\t": ""}
