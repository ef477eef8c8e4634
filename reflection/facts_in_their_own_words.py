"""Whether a fact about a person rests on that person's own words in the session.

Reflection may say "Dana is leaving the company" because Eve said so; stored as Dana's
identity fact it would be Eve's words about Dana, shown to Dana's readers as what Dana
is. A fact is kept only when most of its content words are words that person said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
# Words that carry no claim of their own.
_FUNCTION_WORDS = frozenset({
    "the", "and", "for", "with", "that", "this", "from", "they", "them", "their", "there",
    "are", "was", "were", "has", "have", "had", "not", "but", "you", "your", "yours", "our",
    "ours", "its", "his", "her", "hers", "she", "him", "who", "what", "when", "where", "which",
    "will", "would", "can", "could", "should", "into", "onto", "about", "than", "then", "also",
    "just", "very", "more", "most", "less", "some", "any", "all", "each", "every", "person",
    "user", "likes", "prefers", "wants",
})
# A redacted secret's marker is a placeholder, not a claim.
_MARKER = re.compile(r"\[REDACTED:[^\]]*\]")
# At least this share of a fact's content words must be the person's own.
MIN_SHARE = 0.5


def _stems(text: str) -> set[str]:
    # Five letters keep "prefers" and "prefer", "deploys" and "deploying" together.
    return {word[:5] for word in (w.lower() for w in _WORD.findall(_MARKER.sub(" ", text)))
            if word not in _FUNCTION_WORDS}


def rests_on(fact: str, said: Iterable[str]) -> bool:
    """Whether ``fact`` is mostly made of words in ``said`` (what the person wrote)."""
    claimed = _stems(fact)
    if not claimed:
        return False
    own = set().union(*(_stems(text) for text in said))
    return len(claimed & own) >= MIN_SHARE * len(claimed)
