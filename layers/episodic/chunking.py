"""Split long episode text into overlapping windows the embedding model can read whole.

MiniLM reads at most 256 word pieces and silently drops the rest. English runs
about 1.3 pieces per word, so 160-word windows fit with room to spare; the
overlap keeps a sentence that straddles a boundary whole in one window.
"""

from __future__ import annotations

WINDOW_WORDS = 160
OVERLAP_WORDS = 40


def chunk_text(text: str, window: int = WINDOW_WORDS, overlap: int = OVERLAP_WORDS) -> list[str]:
    """The text as one or more windows of at most ``window`` words; never empty."""
    if overlap >= window:
        raise ValueError("overlap must be smaller than the window")
    words = text.split()
    if len(words) <= window:
        return [text.strip()]
    step = window - overlap
    chunks: list[str] = []
    for start in range(0, len(words), step):
        chunks.append(" ".join(words[start : start + window]))
        if start + window >= len(words):
            break
    return chunks


def episode_text(user_text: str, summary: str, user_name: str | None = None) -> str:
    """What an episode is embedded by: who spoke, the message, then the reply's summary.

    The speaker's name belongs in the vector: people ask "what did Dana say about X",
    and a message read without its speaker is often ambiguous.
    """
    said = f"{user_name}: {user_text}" if user_name else user_text
    return f"{said}\n{summary}".strip() if summary else said.strip()
