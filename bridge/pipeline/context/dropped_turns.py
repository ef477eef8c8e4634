"""The dropped-turns note: tells the model that the oldest turns of the conversation were
left out to fit the transcript's budget (``layers/working/budget.py``).

It rides with the turn's message rather than ahead of the conversation, so the cached
conversation does not change when the count does (issue 27).
"""

from __future__ import annotations

from bridge.pipeline.context import ContextAsk, ContextBlock


class DroppedTurns:
    name = "dropped-turns"
    # Longer than the transcript's own deadline (``pipeline.TRANSCRIPT_DEADLINE_S``), so
    # a late read is told once, as the transcript's.
    deadline_s = 1.5
    step: str | None = None
    first_turn_only = False

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        transcript = await ask.transcript()
        note = transcript.note if transcript is not None else None
        return ContextBlock(self.name, note) if note else None
