"""Tools the model may call during a turn, and the pipeline's answers to them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bridge.model.protocol import ToolCall, ToolSpec
from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.turn import Turn
from layers.episodic.memory import EpisodicMemory

log = logging.getLogger(__name__)

RECALL_MEMORY = ToolSpec(
    name="recall_memory",
    description=(
        "Search earlier conversations this person may see from here (visibility rules"
        " apply). Returns dated episodes, best first. Use it when the person refers to"
        " something earlier that is not in front of you."
    ),
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    },
)


class ToolBox:
    """The tools of a turn: their specs for the request, and running a call."""

    def __init__(self, episodic: EpisodicMemory | None, *, recall_k: int) -> None:
        self._episodic = episodic
        self._recall_k = recall_k

    @property
    def specs(self) -> Sequence[ToolSpec]:
        return (RECALL_MEMORY,) if self._episodic is not None else ()

    async def run(self, call: ToolCall, turn: Turn) -> tuple[str, bool]:
        """The tool's text result and whether it is an error (told to the model, not raised)."""
        if call.name == RECALL_MEMORY.name and self._episodic is not None:
            query = call.input.get("query")
            if not isinstance(query, str) or not query.strip():
                return "recall_memory needs a non-empty 'query' string.", True
            try:
                hits = await asyncio.to_thread(
                    self._episodic.recall, query, turn.viewer, k=self._recall_k
                )
            except Exception:
                log.exception("recall_memory failed")
                return "Memory search is unavailable right now.", True
            return (episodes_text(hits) or "No matching episodes."), False
        return f"Unknown tool {call.name!r}.", True
