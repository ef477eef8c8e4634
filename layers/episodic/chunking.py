"""What an episode is embedded as: its units, each one vector.

A turn of one sentence is one unit. A turn of several is one unit per sentence
(the recall lever ``sentence_units``): a question matches the one sentence that
answers it better than the whole turn, whose other sentences dilute its vector, and
an episode scores its best unit's cosine. Measured on LoCoMo's development
conversations, sentence units alone gave +1.5 points of R@5 beside the whole turn's
vector, and +2.6 in place of it (``bench/locomo_recall.py``); in place of it, a turn
costs the embedder about the same number of word pieces as before.

MiniLM reads at most 256 word pieces and silently drops the rest. English runs
about 1.3 pieces per word, so 160-word windows fit with room to spare; the
overlap keeps a sentence that straddles a boundary whole in one window.

Sentences are split by a rule, not a library: chat messages end their sentences with
., ! or ? and a space far more often than they hold abbreviations, and a wrong split
only makes two units of one sentence, each still searched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

WINDOW_WORDS = 160
OVERLAP_WORDS = 40
# A sentence shorter than this ("Wow!", "Thanks so much!") answers no question: not a
# unit of its own (its words are still searched). Joining it to the next sentence
# instead diluted that one's vector: R@5 .691 against .703 dropped, on LoCoMo's dev.
MIN_SENTENCE_WORDS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


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


def episode_units(user_text: str, summary: str, user_name: str | None,
                  *, by_sentence: bool = True) -> list[str]:
    """The texts an episode is embedded as: its sentences of three words or more (each with
    its speaker, and the reply's summary as one more) when it has two or more, else the
    whole turn; any unit
    past the model's window in overlapping windows. Never empty."""
    sentences = split_sentences(user_text) if by_sentence else []
    if len(sentences) < 2:
        return chunk_text(episode_text(user_text, summary, user_name))
    units = [chunk for sentence in sentences
             for chunk in chunk_text(episode_text(sentence, "", user_name))]
    return units + chunk_text(summary) if summary.strip() else units


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences of at least ``MIN_SENTENCE_WORDS`` words."""
    return [piece for piece in _SENTENCE_END.split(text.strip())
            if len(piece.split()) >= MIN_SENTENCE_WORDS]


# A file's extract is embedded in at most this many windows, spread evenly over it from
# its first to its last: every word is still searched by the word index, but a long file
# costs the embedder a bounded time (a 50 KB log is about 50 windows of 256 word pieces,
# seconds on two cores: bench/files_stored.py), and the embedder is the one recall uses.
FILE_WINDOWS = 8


def file_units(files: Sequence[tuple[str, str]]) -> list[str]:
    """The texts a turn's files are embedded as: each (name, extract)'s windows, its name
    heading each, at most ``FILE_WINDOWS`` a file; none for a file with no extract."""
    units: list[str] = []
    for name, extract in files:
        if extract.strip():
            units += [f"{name}: {window}" for window in _spread(chunk_text(extract))]
    return units


def _spread(windows: list[str]) -> list[str]:
    """At most ``FILE_WINDOWS`` of ``windows``, evenly apart, the first and last among them."""
    if len(windows) <= FILE_WINDOWS:
        return windows
    step = (len(windows) - 1) / (FILE_WINDOWS - 1)
    return [windows[round(index * step)] for index in range(FILE_WINDOWS)]
