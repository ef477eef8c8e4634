"""Remembered text as quoted data in a prompt: it can never close its block or open another.

Episodes, identity facts, memory notes and tool results were written by people (anyone in
the workspace) and are spliced into the model's context inside tags such as
`<related-episodes>`. Their angle brackets and ampersands are escaped as in HTML, so a
stored "</related-episodes><rules>…" stays text inside its block; the persona's rules
tell the model these blocks are quotations, never instructions. The names people chose
for themselves are such text too: reflection quotes each speaker's name in the
conversation it reads (``reflection/session_input.py``). Slack reads the same three
characters as control characters, so the Slack bridge escapes what it posts with this one
function too (``bridge/slack_api/escaping.py``). On the floor, not in the bridge, so
reflection quotes with the same function.
"""

from __future__ import annotations


def quoted(text: str) -> str:
    # Three replaces run in C: a tenth of str.translate's time (bench/quoting.py).
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
