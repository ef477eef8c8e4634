"""The tools, each capability defined once and offered to the model in a turn, over MCP,
or both.

A tool is its name, what it is for, the JSON schema of its arguments and its handler.
The handler takes who calls (``Caller``: who they are, and what they may read from where
they ask) and the call's ``Arguments``, and returns an ``Answer``: the data a program
reads (MCP's structured result) and the text the model reads, remembered words quoted
(``layers/shared/quoting.py``). A call that cannot be answered raises ``BadInput`` with
one line. Each surface adapts the one definition: ``ToolBox`` runs the model's calls as
the turn's speaker in the turn's place; ``bridge/mcp/tool_server.py`` serves them as the
asker of each MCP request. Which surface offers which tool is one list, ``offered.py``: a
new tool is its module here and a line there.

Decided: one name per capability. Where a turn's tool and an MCP tool did the same
thing under two names, the MCP name is the one kept: it is published (written into
clients' configurations and permission lists), while a turn's names are read only by
Thoth's own model, afresh in each request. So ``recall`` (the turn's was
``recall_memory``), ``get_skill`` (``use_skill``), ``what_do_you_know_about_me``
(``what_i_know_about_you``), and, to speak in the same voice, the asker's,
``forget_about_me`` (``forget_about_you``).
Decided: a tool's step title lives with the tool, not in ``bridge/messages.py``, so the
tool is written in one place.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from bridge.model.protocol import Attachment, ToolCall, ToolOutcome, ToolSpec
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.turn import Turn
from layers.identity.protocol import Person
from layers.shared.audit import slack_actor
from layers.shared.errors import BadInput
from layers.shared.places import LOCAL_TEAM, Viewer
from layers.shared.quoting import quoted

log = logging.getLogger(__name__)

# What the model is told: the text, and whether it is an error (told, never raised).
ToolResult = tuple[str, bool]
OTHER_TOOL_TITLE = "Using a tool"
# How the audit log names a turn as the way in.
CONVERSATION = "conversation"

Who = TypeVar("Who")
Other = TypeVar("Other")


@dataclass(frozen=True)
class Caller:
    """Who calls a tool, and what they may read: a turn's speaker in the turn's place, or
    MCP's asker as in their DM with Thoth. A tool reads memory only through ``viewer``
    and ``known_as``, so what each surface may read is what it sets here."""

    viewer: Viewer
    # Who they are (None: an anonymous turn), and every key they are known under.
    person: Person | None = None
    known_as: tuple[Person, ...] = ()
    # As the audit log names them, and the way they came in.
    actor: str = ""
    origin: str = CONVERSATION
    # Their time zone (an IANA name): a date they name is a day there. None: UTC.
    zone: str | None = None
    # Their own words this turn, and when they came: a confirmation must be a person's
    # own message (over MCP there is none: a program's call confirms nothing).
    words: str = ""
    at: float = 0.0
    # The skills loaded so far this turn (``get_skill``): a skill's ``allowed-tools`` are
    # pre-approved while it is in use.
    skills_in_use: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Audit:
    """What a call did, for the audit log where its surface writes one (MCP: every call;
    a turn's reads are not logged, and a tool that changes something logs itself)."""

    action: str
    target: str
    detail: str = ""


@dataclass(frozen=True)
class Answer:
    """``data``: what a program reads (JSON: MCP's structured result). ``text``: what the
    model reads, when it is not ``data`` quoted; a tool that gives it says why it may be
    read unquoted (its own words, or a procedure the founders approved). ``attachments``:
    the images the model sees after the text (a team's MCP tool answered with them)."""

    data: Any
    text: str | None = None
    audit: Audit | None = None
    attachments: tuple[Attachment, ...] = ()
    # The skill this answer put in use (``get_skill``), for the rest of the turn.
    skill_in_use: str | None = None

    @property
    def for_model(self) -> str:
        if self.text is not None:
            return self.text
        data = self.data if isinstance(self.data, str) else json.dumps(self.data,
                                                                       ensure_ascii=False)
        return quoted(data)


@dataclass(frozen=True)
class Tool(Generic[Who]):
    """One capability. ``Who`` is how a surface names its caller: every shared tool takes
    a ``Caller``; MCP's own (``bridge/mcp/proposals.py``) take its ``Asker``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handle: Callable[[Who, Arguments], Awaitable[Answer]]
    # What the person sees while it runs in a turn.
    step_title: str = OTHER_TOOL_TITLE
    # Whether it changes what Thoth keeps (every other tool only reads).
    changes: bool = False

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema)

    def asked_by(self, caller: Callable[[Other], Who]) -> Tool[Other]:
        """The same tool on a surface whose asker is an ``Other``: ``caller`` says who
        that is in this tool's terms."""
        handle = self.handle

        async def as_other(asker: Other, arguments: Arguments) -> Answer:
            return await handle(caller(asker), arguments)

        return Tool(self.name, self.description, self.input_schema, as_other,
                    self.step_title, self.changes)


def speaker(turn: Turn) -> Caller:
    """A turn's speaker, reading as they may in the turn's place."""
    person = turn.person
    actor = "" if person is None else (
        person.user if person.team == LOCAL_TEAM else slack_actor(person.user))
    return Caller(turn.viewer, person=person, known_as=tuple(turn.known_as()), actor=actor,
                  origin=CONVERSATION, zone=turn.zone, words=turn.text, at=turn.received_at)


# A brain made before one name per capability keeps the turn's old names in its persona
# files (`thoth init` copies them once): a call by one is answered by the tool it became,
# though only the new names are offered.
FORMER_NAMES = {
    "recall_memory": "recall", "use_skill": "get_skill",
    "what_i_know_about_you": "what_do_you_know_about_me", "forget_about_you": "forget_about_me",
}


class MoreTools(Protocol):
    """Tools a turn offers beside Thoth's own, found for each turn (the team's MCP
    servers: ``bridge/team_tools``), where its place allows them."""

    async def offered(self, turn: Turn) -> Sequence[Tool[Caller]]: ...


class ToolBox:
    """The tools a turn offers the model: their specs for the request, and running a call
    as the turn's speaker."""

    def __init__(self, tools: Sequence[Tool[Caller]] = (), more: MoreTools | None = None,
                 ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._more = more
        self._skills_in_use: set[str] = set()

    async def for_turn(self, turn: Turn) -> ToolBox:
        """The tools of this turn: Thoth's own, and those found for it (a source that
        fails adds none: the turn goes on with the rest)."""
        found: Sequence[Tool[Caller]] = ()
        if self._more is not None:
            try:
                found = await self._more.offered(turn)
            except Exception:
                log.exception("the turn's other tools could not be found")
        # A box of its own for each turn (what it puts in use is the turn's); Thoth's own
        # names are never shadowed by a server's.
        return ToolBox([*found, *self._tools.values()])

    def _named(self, name: str) -> Tool[Caller] | None:
        return self._tools.get(name) or self._tools.get(FORMER_NAMES.get(name, ""))

    @property
    def specs(self) -> Sequence[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def changes(self, name: str) -> bool:
        """Whether the named tool changes what Thoth keeps."""
        tool = self._named(name)
        return tool is not None and tool.changes

    def step_title(self, name: str) -> str:
        tool = self._named(name)
        return tool.step_title if tool is not None else OTHER_TOOL_TITLE

    async def run(self, call: ToolCall, turn: Turn) -> ToolResult:
        """The tool's text result and whether it is an error."""
        outcome = await self.outcome(call, turn)
        return outcome.text, outcome.is_error

    async def outcome(self, call: ToolCall, turn: Turn) -> ToolOutcome:
        """What the model is told of the call: the text, whether it is an error, and the
        images it answered with."""
        tool = self._named(call.name)
        if tool is None:
            return ToolOutcome(call.id, f"Unknown tool {call.name!r}.", True)
        caller = replace(speaker(turn), skills_in_use=frozenset(self._skills_in_use))
        try:
            answer = await tool.handle(caller, Arguments(call.input))
        except BadInput as error:
            return ToolOutcome(call.id, str(error), True)
        except Exception:
            log.exception("tool %s failed", call.name)
            return ToolOutcome(call.id, f"The tool {call.name} failed; go on without it.",
                               True)
        if answer.skill_in_use is not None:
            self._skills_in_use.add(answer.skill_in_use)
        return ToolOutcome(call.id, answer.for_model, False, answer.attachments)
