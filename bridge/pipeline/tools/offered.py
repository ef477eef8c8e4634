"""Every tool once, and which surface offers it: the one list.

A turn offers the model what helps it answer the person speaking; MCP offers a coding
agent the team's memory and skills. A tool that one surface only offers is still
defined as every tool is, so offering it on the other is a change to its line here. A
surface passes the parts it has; a tool whose part is off (None) is offered nowhere.
MCP adds two of its own, ``remember`` and ``propose_skill`` (``bridge/mcp/proposals.py``):
what they propose waits for a founder on a card only MCP posts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from bridge.forget_person import PersonForgetting
from bridge.pipeline.tools import Caller, Tool
from bridge.pipeline.tools.about_me import forget_about_me, what_do_you_know_about_me
from bridge.pipeline.tools.recall import recall
from bridge.pipeline.tools.skills import get_skill, list_skills
from layers.episodic.memory import EpisodicMemory
from layers.identity.protocol import IdentityBackend
from layers.procedural.skills import SkillLibrary
from layers.shared.offloaded import Offloaded

Surface = Literal["turn", "mcp"]
TURN: frozenset[Surface] = frozenset({"turn"})
MCP: frozenset[Surface] = frozenset({"mcp"})
BOTH = TURN | MCP


@dataclass(frozen=True)
class ToolDependencies:
    """What the tools are made of, as a surface has them."""

    skills: Offloaded[SkillLibrary]
    # How many episodes a recall that names none reads.
    recall_k: int
    episodic: Offloaded[EpisodicMemory] | None = None
    identity: IdentityBackend | None = None
    # "Forget me" (``bridge/forget_person.py``): offered in a turn where it is given.
    forgetting: PersonForgetting | None = None


def tools_for(surface: Surface, parts: ToolDependencies) -> list[Tool[Caller]]:
    """The tools ``surface`` offers, in the list's order (a turn's request lists them so)."""
    return [tool for offered_on, tool in _every_tool(parts) if surface in offered_on]


def _every_tool(parts: ToolDependencies) -> Iterator[tuple[frozenset[Surface], Tool[Caller]]]:
    if parts.episodic is not None:
        yield BOTH, recall(parts.episodic, k=parts.recall_k)
    yield BOTH, get_skill(parts.skills)
    yield MCP, list_skills(parts.skills)
    if parts.identity is not None:
        yield BOTH, what_do_you_know_about_me(parts.identity)
    if parts.forgetting is not None:
        yield TURN, forget_about_me(parts.forgetting)
