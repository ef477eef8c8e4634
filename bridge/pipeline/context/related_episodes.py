"""``<related-episodes>``: on a session's first turn, what earlier conversations the
speaker may see say about the message (L3), each dated, best first.

Only the first turn: later turns have the conversation itself, and the model can still
search with ``recall``. The search is shown as a step, since it may take a moment
(the embedding model), and the episodes shown are recorded as recalled after the reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge import messages
from bridge.pipeline.context import ContextAsk, ContextBlock, tagged
from bridge.pipeline.episodes_block import episodes_text
from layers.episodic.episode import Hit
from layers.episodic.memory import EpisodicMemory
from layers.episodic.named_dates import zone_named
from layers.shared.offloaded import Offloaded
from layers.shared.quoting import quoted


class RelatedEpisodes:
    name = "related-episodes"
    step: str | None = messages.STEP_SEARCHING_MEMORY
    first_turn_only = True

    def __init__(
        self, episodic: Offloaded[EpisodicMemory], *, k: int, deadline_s: float = 2.0
    ) -> None:
        """``k``: ``RECALL_TOP_K``, how many episodes at most."""
        self._episodic = episodic
        self._k = k
        self.deadline_s = deadline_s

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        turn = ask.turn
        return episodes_block(await self._episodic.run(lambda memory: memory.recall(
            turn.text, turn.viewer, k=self._k, zone=zone_named(turn.zone))))


def episodes_block(hits: Sequence[Hit]) -> ContextBlock | None:
    if not hits:
        return None
    name = RelatedEpisodes.name
    return ContextBlock(name, tagged(name, quoted(episodes_text(hits))),
                        recalled=tuple(hit.episode.id for hit in hits))
