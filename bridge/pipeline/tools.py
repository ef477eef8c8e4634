"""Tools the model may call during a turn, and the pipeline's answers to them."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence

from bridge.model.protocol import ToolCall, ToolSpec
from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.quoting import quoted
from bridge.pipeline.turn import Turn
from layers.episodic.memory import EpisodicMemory
from layers.identity.protocol import IdentityBackend, Person
from layers.procedural.skills import SkillLibrary

log = logging.getLogger(__name__)

# The person's own words that confirm deleting everything about them.
CONFIRM_FORGET = re.compile(
    r"^\W*yes\W+(?:please\W+)?forget (?:everything|it all|all)\b", re.IGNORECASE)
CONFIRM_WINDOW_S = 600.0
FORGET_ALL_ASKS = (
    "Nothing is deleted yet: deleting everything about them needs their own confirmation."
    " Ask them to reply 'yes, forget everything' if that is what they want."
)

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


ABOUT_SPEAKER = ToolSpec(
    name="what_i_know_about_you",
    description=(
        "List what the identity memory holds about the person speaking now, with ids."
        " Use it when they ask what you know or remember about them."
    ),
    input_schema={"type": "object", "properties": {}},
)
FORGET_SPEAKER = ToolSpec(
    name="forget_about_you",
    description=(
        "Delete what the identity memory holds about the person speaking now: one fact by"
        " its id from what_i_know_about_you, or everything when no id is given. Only when"
        " they ask you to forget something about them. Forgetting everything needs the"
        " person's own confirmation in their next message ('yes, forget everything')."
    ),
    input_schema={
        "type": "object",
        "properties": {"fact_id": {"type": "string", "description": "omit to forget all"}},
    },
)


class ToolBox:
    """The tools of a turn: their specs for the request, and running a call."""

    def __init__(
        self,
        episodic: EpisodicMemory | None,
        skills: SkillLibrary | None = None,
        identity: IdentityBackend | None = None,
        *,
        recall_k: int,
        on_forget: Callable[[Person], None] | None = None,
        stop_ingest: Callable[[Person], object] | None = None,
    ) -> None:
        self._episodic = episodic
        self._skills = skills
        self._identity = identity
        self._recall_k = recall_k
        self._on_forget = on_forget
        # Called before everything is forgotten: nothing said before (this very turn
        # included) is sent to the identity backend afterwards (layers/identity/tombstones).
        self._stop_ingest = stop_ingest
        # Whose "forget everything" was asked for, in which of their turns (its time).
        self._forget_asked: dict[str, float] = {}

    @property
    def specs(self) -> Sequence[ToolSpec]:
        specs: list[ToolSpec] = []
        if self._episodic is not None:
            specs.append(RECALL_MEMORY)
        if self._skills is not None:
            specs.append(USE_SKILL)
        if self._identity is not None:
            specs.extend((ABOUT_SPEAKER, FORGET_SPEAKER))
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
            return (quoted(episodes_text(hits)) or "No matching episodes."), False
        if call.name == USE_SKILL.name and self._skills is not None:
            return await asyncio.to_thread(self._skill_body, call.input.get("name"))
        if call.name in (ABOUT_SPEAKER.name, FORGET_SPEAKER.name) and self._identity is not None:
            return await self._about_speaker(call, turn)
        return f"Unknown tool {call.name!r}.", True

    async def _about_speaker(self, call: ToolCall, turn: Turn) -> tuple[str, bool]:
        # Only ever the person speaking: nobody can read or erase someone else's model.
        assert self._identity is not None
        person = turn.person
        if person is None:
            return "The speaker is anonymous here; nothing is stored about them.", True
        if call.name == ABOUT_SPEAKER.name:
            # Only what may be read here: a DM's facts never come up in a channel.
            facts = await self._identity.facts(person, turn.viewer)
            lines = [f"- [{fact.id}] {quoted(fact.text)}" for fact in facts]
            return "\n".join(lines) or "Nothing is stored about them.", False
        fact_id = call.input.get("fact_id")
        if isinstance(fact_id, str):
            deleted = await self._identity.forget(person, fact_id)
            said = f"deleted {deleted} fact(s)"
        elif not self._confirmed_forget_all(person, turn):
            return FORGET_ALL_ASKS, False
        else:
            if self._stop_ingest is not None:
                await asyncio.to_thread(self._stop_ingest, person)
            said = (await self._identity.forget_person(person)).describe()
        if self._on_forget is not None:
            self._on_forget(person)
        log.info("forgot at the speaker's request: %s", said)
        return f"Done: {said} about them.", False

    def _confirmed_forget_all(self, person: Person, turn: Turn) -> bool:
        """Whether deleting everything about ``person`` is their own wish, confirmed.

        A model's word is not enough (stored text could talk it into the call): the first
        call only asks, and the delete runs when a later message of the person's own
        begins "yes, forget everything", within CONFIRM_WINDOW_S of the ask. Decided:
        words, not a button, so the same confirmation works in Slack and in the terminal;
        the ask is this process's (with several replicas a confirmation that lands on
        another one is asked again: nothing is deleted on a guess).
        """
        asked = self._forget_asked.get(person.key)
        later = asked is not None and asked < turn.received_at <= asked + CONFIRM_WINDOW_S
        if later and CONFIRM_FORGET.match(turn.text):
            del self._forget_asked[person.key]
            return True
        if asked is None or turn.received_at > asked:
            self._forget_asked[person.key] = turn.received_at
        return False

    def _skill_body(self, name: object) -> tuple[str, bool]:
        assert self._skills is not None
        skill = self._skills.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(self._skills.skills()) or "none"
            return f"No skill named {name!r}. Installed skills: {known}.", True
        log.info("skill %s %s loaded for a turn", skill.slug, skill.manifest.version)
        return f"# Skill {skill.slug} {skill.manifest.version}\n\n{skill.body}", False
