"""Whether a message asks or tells: one rule for the offline responder (a statement is
acknowledged, a question is answered from memory) and for the pipeline (a question no
model answered is not worth an episode)."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ASKING = re.compile(
    r"^\s*(what|who|whom|whose|when|where|why|how|which|do|does|did|can|could|should|would"
    r"|will|is|are|was|were|have|has|had|tell me|show me|remind me|find|recall|search|list"
    r"|any)\b",
    re.IGNORECASE,
)


def asks(message: str) -> bool:
    """Every sentence asks: a question, or a request to look something up. "We moved
    staging. Did you know?" tells (its first sentence is a fact to keep)."""
    sentences = [part.strip() for part in _SENTENCE.split(message.strip()) if part.strip()]
    return bool(sentences) and all(
        sentence.endswith("?") or _ASKING.match(sentence) is not None for sentence in sentences
    )
