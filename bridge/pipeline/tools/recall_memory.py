"""``recall_memory``: the model searches earlier conversations the person may see."""

from __future__ import annotations

import logging
from typing import Any

from bridge.model.protocol import ToolSpec
from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.quoting import quoted
from bridge.pipeline.tools import Tool, ToolResult
from bridge.pipeline.turn import Turn
from layers.episodic.memory import EpisodicMemory
from layers.episodic.named_dates import zone_named
from layers.offloaded import Offloaded

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


def recall_memory(episodic: Offloaded[EpisodicMemory], *, k: int) -> Tool:
    async def handle(arguments: dict[str, Any], turn: Turn) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return "recall_memory needs a non-empty 'query' string.", True
        try:
            hits = await episodic.run(lambda memory: memory.recall(
                query, turn.viewer, k=k, zone=zone_named(turn.zone)))
        except Exception:
            log.exception("recall_memory failed")
            return "Memory search is unavailable right now.", True
        return (quoted(episodes_text(hits)) or "No matching episodes."), False

    return Tool(RECALL_MEMORY, "Searching memory", handle)
