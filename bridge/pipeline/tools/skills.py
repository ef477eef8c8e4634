"""``get_skill`` and ``list_skills``: the team's skills, the procedures Thoth follows.

A turn's prompt lists every skill already (its skill index), so a turn offers only
``get_skill``; a coding agent over MCP lists them first. What ``get_skill`` gives is the
skill's SKILL.md, as the resource ``thoth://skills/{name}`` gives it, and the model
reads it unquoted: a skill is a procedure the founders approved, to be followed
(persona/RULES.md), not remembered words.
"""

from __future__ import annotations

import logging

from bridge.pipeline.tools import Answer, Audit, Caller, Tool
from bridge.pipeline.tools.arguments import Arguments, said
from layers.procedural.skills import SkillLibrary, render_skill_md
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

GET_SKILL = "get_skill"
LIST_SKILLS = "list_skills"


def get_skill(skills: Offloaded[SkillLibrary]) -> Tool[Caller]:
    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        name = arguments.text("name")
        text = await skills.run(skill_md, name)
        log.info("skill %s read", name)
        return Answer(text, text, Audit(GET_SKILL, name), skill_in_use=name)

    return Tool(GET_SKILL, (
        "Load one of the team's skills whole: its SKILL.md (name, description and"
        " instructions), a procedure to follow as the team does. Call it when a request"
        " matches a skill's description, then follow it."
    ), {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "the skill's name"}},
        "required": ["name"],
    }, handle, step_title="Loading a skill")


def list_skills(skills: Offloaded[SkillLibrary]) -> Tool[Caller]:
    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        listed = await skills.run(SkillLibrary.skills)
        data = [{"name": slug, "description": skill.description}
                for slug, skill in sorted(listed.items())]
        return Answer(data, audit=Audit(LIST_SKILLS, "skills", f"{len(data)} skills"))

    return Tool(LIST_SKILLS, (
        "The team's skills: procedures Thoth follows, each with its name and what it is"
        f" for. Read one with {GET_SKILL}."
    ), {"type": "object", "properties": {}}, handle, step_title="Listing the skills")


def skill_md(skills: SkillLibrary, name: str) -> str:
    """The skill's SKILL.md as the team's agents read it; ``BadInput`` naming the team's
    skills when there is none by that name."""
    skill = skills.get(name)
    if skill is None:
        known = ", ".join(sorted(skills.skills())) or "none"
        raise BadInput(f"no skill {said(name)}; the team's skills: {known}")
    return render_skill_md(skill.slug, skill.description, skill.body, skill.allowed_tools)
