"""The part of a recalled file a question is about: the passage shown beside the episode.

A recalled episode shows its own words whole (clipped), but a file's extract may be a
hundred pages: the reader (the model, the offline responder, an MCP client) is shown the
passage of it that holds most of the question's words, or its opening when none does.
By words, not by meaning: the passage is picked after recall, for a few files, and
counting words costs microseconds where embedding every passage would cost seconds.
"""

from __future__ import annotations

from layers.episodic.chunking import chunk_text
from layers.episodic.lexical import content_words

PASSAGE_WORDS = 120
PASSAGE_OVERLAP = 30


def passage_for(extract: str, question: str) -> str:
    """The window of ``extract`` that holds most of ``question``'s words ('' for none)."""
    if not extract.strip():
        return ""
    windows = chunk_text(extract, PASSAGE_WORDS, PASSAGE_OVERLAP)
    wanted = {_stem(word) for word in content_words(question)}
    if not wanted or len(windows) == 1:
        return windows[0]

    def held(window: str) -> int:
        return len(wanted & {_stem(word) for word in content_words(window)})

    # max keeps the first of equals: the earlier passage, where a document says it first.
    return max(windows, key=held)


def _stem(word: str) -> str:
    """A word's first five letters: "deadline" meets "deadlines", "deploying" "deploy"."""
    return word[:5]
