"""Tools the model may call during a turn, and the pipeline's answers to them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bridge.model.protocol import ToolCall, ToolSpec
from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.turn import Turn
from layers.episodic.memory import EpisodicMemory
from layers.procedural.skills import SkillLibrary

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


USE_SKILL = ToolSpec(
    name="use_skill",
    description=(
        "Load the full instructions of a skill listed in the skill index, for this turn."
        " Call it when the request matches a skill's description, then follow them."
    ),
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "the skill's name"}},
        "required": ["name"],
    },
)


class ToolBox:
    """The tools of a turn: their specs for the request, and running a call."""

    def __init__(
        self,
        episodic: EpisodicMemory | None,
        skills: SkillLibrary | None = None,
        *,
        recall_k: int,
    ) -> None:
        self._episodic = episodic
        self._skills = skills
        self._recall_k = recall_k

    @property
    def specs(self) -> Sequence[ToolSpec]:
        specs: list[ToolSpec] = []
        if self._episodic is not None:
            specs.append(RECALL_MEMORY)
        if self._skills is not None:
            specs.append(USE_SKILL)
        return specs

    async def run(self, call: ToolCall, turn: Turn) -> tuple[str, bool]:
        """The tool's text result and whether it is an error (told to the model, not raised)."""
        try:
            return await self._dispatch(call, turn)
        except Exception:
            log.exception("tool %s failed", call.name)
            return f"The tool {call.name} failed; go on without it.", True

    async def _dispatch(self, call: ToolCall, turn: Turn) -> tuple[str, bool]:
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
        if call.name == USE_SKILL.name and self._skills is not None:
            return await asyncio.to_thread(self._skill_body, call.input.get("name"))
        return f"Unknown tool {call.name!r}.", True

    def _skill_body(self, name: object) -> tuple[str, bool]:
        assert self._skills is not None
        skill = self._skills.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(self._skills.skills()) or "none"
            return f"No skill named {name!r}. Installed skills: {known}.", True
        log.info("skill %s %s loaded for a turn", skill.slug, skill.manifest.version)
        return f"# Skill {skill.slug} {skill.manifest.version}\n\n{skill.body}", False
