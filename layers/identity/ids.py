"""Slack ids as Honcho ids: Honcho allows only ``[a-zA-Z0-9_-]``, at most 512 characters.

The mapping is deterministic and injective: ``_`` becomes ``__`` and any other
character outside the set becomes ``_<hex code point>-``, so ``C1:1712.55`` and
``C1_1712_55`` can never meet. An id that would pass 512 characters keeps a
prefix and a hash of the whole.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID_CHARS = 512
_ALLOWED = re.compile(r"[a-zA-Z0-9-]")


def honcho_id(*parts: str) -> str:
    """One Honcho id for the joined parts (``:`` separates them before escaping)."""
    raw = ":".join(parts)
    escaped = "".join(_escape(char) for char in raw)
    if len(escaped) <= MAX_ID_CHARS:
        return escaped
    digest = hashlib.sha256(raw.encode()).hexdigest()[:32]
    return f"{escaped[: MAX_ID_CHARS - 34]}-h{digest}"


def _escape(char: str) -> str:
    if _ALLOWED.match(char):
        return char
    if char == "_":
        return "__"
    return f"_{ord(char):x}-"
