"""The team's MCP tools as a turn offers them: ``SERVER__tool``, where the place allows,
as the policy keeps them, run with a timeout, their results capped and quoted.

A server that cannot be reached is left out of that turn (logged; the turn goes on). A
tool the operator did not list as read-only runs only with a yes: the person's standing
one (``grants.py``), a skill in use that names it (``allowed-tools``), or the person's
answer where they can be asked (``bridge/pipeline/tools/approvals.py``); until then it
does not run, and the model is told so. Every call, and every call not run, is in the
audit log, its arguments redacted.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from bridge.files.reader import FileReader
from bridge.pipeline.tools import Answer, Caller, Tool
from bridge.pipeline.tools.approvals import AskedCall, Decision, approvals_of
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.turn import Turn
from bridge.team_tools.asks import Asks
from bridge.team_tools.config import TeamToolsConfig, tool_name
from bridge.team_tools.connection import ServerConnection, ServerDown
from bridge.team_tools.grants import Grants
from bridge.team_tools.results import result_images, result_text
from layers.procedural.skills import SkillLibrary
from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from layers.shared.quoting import quoted
from layers.shared.redaction import redact

log = logging.getLogger(__name__)

# How long listing one server's tools may hold a turn back (its first turn: connecting).
LISTING_DEADLINE_S = 10.0
# Characters of a call's arguments the audit log keeps (redacted, as every line is).
AUDITED_ARGUMENTS = 2_000


@dataclass(frozen=True)
class ServerTool:
    """One tool of one server, as the policy sees it."""

    server: str
    tool: types.Tool
    read_only: bool

    @property
    def name(self) -> str:
        return tool_name(self.server, self.tool.name)


@dataclass(frozen=True)
class TeamToolStores:
    """What the team's tools keep: standing yeses, waiting asks, the audit log."""

    grants: Grants
    asks: Asks
    audit: AuditLog


class TeamTools:
    """Every server of the team's ``mcp.json``, connected when first used."""

    def __init__(self, config: TeamToolsConfig, stores: Offloaded[TeamToolStores],
                 reader: FileReader, *, timeout_s: float, logs: Path | None = None,
                 skills: Offloaded[SkillLibrary] | None = None) -> None:
        """``reader``: where the images a tool answers with are read and scaled;
        ``skills``: whose ``allowed-tools`` pre-approve a tool while one is in use."""
        self.config = config
        self.stores = stores
        self._reader = reader
        self._skills = skills
        self._timeout_s = timeout_s
        self._servers = {name: ServerConnection(name, entry, logs=logs)
                         for name, entry in config.servers.items()}

    @property
    def servers(self) -> Mapping[str, ServerConnection]:
        return self._servers

    async def listed(self, place: Place | None = None) -> list[ServerTool | ServerDown]:
        """Each server's tools the policy keeps (where ``place`` may use them), or why a
        server could not list them; servers listed at once."""
        used = [server for server in self._servers.values()
                if place is None or server.entry.used_in(place)]
        found = await asyncio.gather(*(self._listed_of(server) for server in used))
        return [item for items in found for item in items]

    async def offered(self, turn: Turn) -> list[Tool[Caller]]:
        """The tools this turn's model may call."""
        return [self._as_tool(item, turn) for item in await self.listed(turn.place)
                if isinstance(item, ServerTool)]

    async def aclose(self) -> None:
        await asyncio.gather(*(server.aclose() for server in self._servers.values()))

    async def _listed_of(self, server: ServerConnection) -> list[ServerTool | ServerDown]:
        try:
            tools = await asyncio.wait_for(server.tools(), LISTING_DEADLINE_S)
        except (ServerDown, TimeoutError) as error:
            down = error if isinstance(error, ServerDown) else ServerDown(
                f"{server.name} did not list its tools within {LISTING_DEADLINE_S:g} s")
            log.warning("MCP server left out: %s", down)
            return [down]
        entry = server.entry
        return [ServerTool(server.name, tool, entry.approved_without_asking(tool.name))
                for tool in tools if entry.tools.keeps(tool.name)]

    def _as_tool(self, item: ServerTool, turn: Turn) -> Tool[Caller]:
        async def handle(caller: Caller, arguments: Arguments) -> Answer:
            given = arguments.given
            decision = (Decision(True, how="read-only") if item.read_only
                        else await self._decided(AskedCall(item.server, item.tool.name, given),
                                                 turn, caller.skills_in_use, caller.actor))
            if not decision.allowed:
                await self._audit(caller.actor, item.name, given, decision.how,
                                  action="tool.not_run")
                raise BadInput(decision.told)
            return await self.run(item.server, item.tool.name, given, actor=caller.actor,
                                  how=decision.how)

        description = (item.tool.description or item.tool.title or item.tool.name).strip()
        return Tool(item.name, f"[{item.server}] {description}",
                    dict(item.tool.input_schema) or {"type": "object"}, handle,
                    step_title=f"Using {item.server}: {item.tool.name}")

    async def run(self, server: str, tool: str, arguments: dict[str, Any], *, actor: str,
                  how: str) -> Answer:
        """Call the tool now (its yes given), audit it, and return what the model reads
        (the text quoted, its images shown); ``BadInput`` with one line when it could not
        answer, the server's words in it quoted."""
        name = tool_name(server, tool)
        connection = self._servers.get(server)
        if connection is None:
            raise BadInput(f"{name}: the server {server} is no longer configured")
        try:
            result = await connection.call(tool, arguments, self._timeout_s)
        except ServerDown as down:
            await self._audit(actor, name, arguments, f"{how}; failed: {down}")
            raise BadInput(f"{quoted(str(down))}; go on without it") from down
        text = result_text(result)
        await self._audit(actor, name, arguments,
                          f"{how}; {'error, ' if result.is_error else ''}{len(text):,} characters")
        if result.is_error:
            raise BadInput(f"{name} answered with an error: {quoted(text)}")
        return Answer(text, attachments=await result_images(result, self._reader))

    async def _decided(self, call: AskedCall, turn: Turn,
                       skills_in_use: frozenset[str] = frozenset(),
                       caller_actor: str = "") -> Decision:
        """Whether the call may run: never with a secret in it; at once with the person's
        standing yes, or a skill in use that pre-approves it; else as the person answers
        where they can be asked."""
        said = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        if redact(said) != said:
            return Decision(False, f"The arguments of {call.name} hold what looks like a"
                                   " secret, and secrets are never passed to a team's tool"
                                   " from a conversation: it did not run. Say so, and that"
                                   " the token belongs in the server's entry of mcp.json.",
                            "a secret in its arguments")
        approving = await self._skill_allowing(call.name, skills_in_use)
        if approving is not None:
            return Decision(True, how=f"pre-approved by the skill {approving} (allowed-tools)")
        person = turn.person
        if person is not None and await self.stores.run(lambda stores: stores.grants.allows(
                person.team, person.user, call.server, call.tool)):
            return Decision(True, how=f"always allowed by {person.user}")
        decision = await approvals_of(turn).ask(call, turn)
        if decision.allowed and decision.always and person is not None:
            await self.grant(person.team, person.user, call.server, call.tool,
                             actor=caller_actor)
        return decision

    async def _skill_allowing(self, name: str, in_use: frozenset[str]) -> str | None:
        """The first skill in use whose ``allowed-tools`` name this tool, if any."""
        if self._skills is None or not in_use:
            return None

        def allowing(library: SkillLibrary) -> str | None:
            return next((slug for slug in sorted(in_use)
                         if (skill := library.get(slug)) is not None and skill.allows(name)),
                        None)

        return await self._skills.run(allowing)

    async def grant(self, team: str, user: str, server: str, tool: str, *,
                    actor: str) -> None:
        """The person's standing yes for the tool, audited as ``actor`` (as the audit
        log names them: ``slack:U…`` from Slack)."""
        await self.stores.run(lambda stores: stores.grants.grant(team, user, server, tool))
        await self.stores.run(lambda stores: stores.audit.record(
            actor=actor or user, action="tool.always_allow", target=tool_name(server, tool),
            origin="conversation", detail=f"in workspace {team}"))

    async def _audit(self, actor: str, name: str, arguments: dict[str, Any], detail: str,
                     *, action: str = "tool.call") -> None:
        said = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        clipped = said if len(said) <= AUDITED_ARGUMENTS else said[:AUDITED_ARGUMENTS] + "…"
        await self.stores.run(lambda stores: stores.audit.record(
            actor=actor or "unknown", action=action, target=name,
            origin="conversation",
            detail=f"{detail}; with the operator's key; arguments {clipped}"))
