"""Keep the transcript within a token budget, dropping the oldest turns first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

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


# When the kept turns outgrow the budget, the oldest are dropped until they fill only this
# share of it. Dropping one turn at a time would change the start of the conversation on
# every later turn, and with it every cached prefix (a cache write of the whole transcript
# each turn, never a read); dropping half at once changes it about once per half-budget of
# new turns, and every turn in between reads the conversation so far from the cache.
REFILL_FROM = 0.5


def trim_to_budget(turns: Sequence[TranscriptTurn], budget_tokens: int) -> TrimmedTranscript:
    """The newest successful turns that fit ``budget_tokens``, oldest first, dropped in
    blocks (``REFILL_FROM``).

    Failed turns are never replayed (their "reply" is an error message, not the
    agent's words). One huge turn (a pasted log) is cut to a quarter of the budget,
    so it cannot push every earlier turn out of the context.
    """
    # An empty reply cannot be replayed (the API refuses an empty assistant message).
    replayable = [_clipped(t, budget_tokens // 4) for t in turns if t.ok and t.reply_text.strip()]
    start = _kept_from(
        [estimate_tokens(t.user_text) + estimate_tokens(t.reply_text) for t in replayable],
        budget_tokens,
    )
    return TrimmedTranscript(replayable[start:], start)


def _kept_from(costs: Sequence[int], budget_tokens: int) -> int:
    """Where the kept turns start. Worked out from the session's first turn every time, so
    each turn of a session finds the start the turn before it found, with nothing stored:
    it moves only when a new turn pushes the kept ones past the budget."""
    start = used = 0
    for newest, cost in enumerate(costs):
        used += cost
        if used > budget_tokens:
            # The newest turn stays whatever its size: clipped, it fits the budget alone.
            while used > budget_tokens * REFILL_FROM and start < newest:
                used -= costs[start]
                start += 1
            if used > budget_tokens:
                used, start = 0, newest + 1
    return start


def _clipped(turn: TranscriptTurn, max_tokens: int) -> TranscriptTurn:
    """The turn with each text cut to ``max_tokens``, keeping its start and its end."""
    limit = max(int(max_tokens * CHARS_PER_TOKEN), 200)

    def cut(text: str) -> str:
        if len(text) <= limit:
            return text
        half = limit // 2
        return f"{text[:half]}\n[… {len(text) - 2 * half} characters cut …]\n{text[-half:]}"

    if len(turn.user_text) <= limit and len(turn.reply_text) <= limit:
        return turn
    return replace(turn, user_text=cut(turn.user_text), reply_text=cut(turn.reply_text))
