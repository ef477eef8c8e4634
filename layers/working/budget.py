"""Keep the transcript within a token budget, dropping the oldest turns first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layers.working.transcript import TranscriptTurn

# Claude's tokenizer is not available offline; English runs about four characters a
# token, and overestimating a little is the safe side of a budget.
CHARS_PER_TOKEN = 3.5


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


@dataclass(frozen=True)
class TrimmedTranscript:
    turns: list[TranscriptTurn]
    dropped: int

    @property
    def note(self) -> str | None:
        """What the model is told when earlier turns no longer fit."""
        if not self.dropped:
            return None
        plural = "s" if self.dropped != 1 else ""
        return (
            f"[{self.dropped} earlier turn{plural} of this conversation were dropped"
            " to fit the context; ask if you need them.]"
        )


def trim_to_budget(turns: Sequence[TranscriptTurn], budget_tokens: int) -> TrimmedTranscript:
    """The newest successful turns that fit ``budget_tokens``, oldest first.

    Failed turns are never replayed (their "reply" is an error message, not the
    agent's words). A turn is kept whole or not at all.
    """
    replayable = [turn for turn in turns if turn.ok]
    kept: list[TranscriptTurn] = []
    used = 0
    for turn in reversed(replayable):
        cost = estimate_tokens(turn.user_text) + estimate_tokens(turn.reply_text)
        if used + cost > budget_tokens:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    return TrimmedTranscript(kept, len(replayable) - len(kept))
