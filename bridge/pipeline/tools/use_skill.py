"""``use_skill``: the model loads an installed skill's full instructions for the turn."""

from __future__ import annotations

import logging
from typing import Any

from bridge.model.protocol import ToolSpec
from bridge.pipeline.tools import Tool, ToolResult
from bridge.pipeline.turn import Turn
from layers.offloaded import Offloaded
from layers.procedural.skills import SkillLibrary

log = logging.getLogger(__name__)

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


def use_skill(skills: Offloaded[SkillLibrary]) -> Tool:
    def body(skills: SkillLibrary, name: object) -> ToolResult:
        skill = skills.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(skills.skills()) or "none"
            return f"No skill named {name!r}. Installed skills: {known}.", True
        log.info("skill %s %s loaded for a turn", skill.slug, skill.manifest.version)
        return f"# Skill {skill.slug} {skill.manifest.version}\n\n{skill.body}", False

    async def handle(arguments: dict[str, Any], turn: Turn) -> ToolResult:
        name = arguments.get("name")
        return await skills.run(lambda library: body(library, name))

    return Tool(USE_SKILL, "Loading a skill", handle)
