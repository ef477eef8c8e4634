"""The team's MCP tools as a turn offers them: ``SERVER__tool``, where the place allows,
as the policy keeps them, run with a timeout, their results capped and quoted.

A server people sign in to (``"auth": "oauth"``) is used with the asking person's own
account: its tools are listed and called through a connection of theirs, with their
token (``bridge/connections/``). A person not connected yet is offered one tool in its
place, ``NAME__connect``, which sends them the link to connect (``Connecting``); the
turn goes on once they have.

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
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from bridge.connections.bearer import PersonsToken
from bridge.connections.discovery import ConnectRefused
from bridge.connections.oauth_client import Connector
from bridge.files.reader import FileReader
from bridge.pipeline.tools import Answer, Caller, Tool
from bridge.pipeline.tools.approvals import AskedCall, Decision, approvals_of
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.connecting import connecting_of
from bridge.pipeline.turn import Turn
from bridge.team_tools.asks import Asks
from bridge.team_tools.config import TeamToolsConfig, tool_name
from bridge.team_tools.connection import ServerConnection, ServerDown
from bridge.team_tools.grants import Grants
from bridge.team_tools.results import result_images, result_text
from layers.identity.protocol import Person
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
# People's own connections kept open at once; the least lately used closes past it (the
# next use opens it again, from the token kept).
PERSONAL_CONNECTIONS = 32
CONNECT = "connect"


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
class NeedsConnecting:
    """A server the turn's person must connect their own account to first."""

    server: str


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
                 skills: Offloaded[SkillLibrary] | None = None,
                 connector: Connector | None = None) -> None:
        """``reader``: where the images a tool answers with are read and scaled;
        ``skills``: whose ``allowed-tools`` pre-approve a tool while one is in use;
        ``connector``: people's own sign-ins, for the servers that take them."""
        self.config = config
        self.stores = stores
        self.connector = connector
        self._reader = reader
        self._skills = skills
        self._timeout_s = timeout_s
        self._logs = logs
        self._servers = {name: ServerConnection(name, entry, logs=logs)
                         for name, entry in config.servers.items() if entry.auth == "operator"}
        self._personal: OrderedDict[tuple[str, str, str], ServerConnection] = OrderedDict()
        # How many calls use each personal connection now, and the closings under way.
        self._in_use: dict[tuple[str, str, str], int] = {}
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def servers(self) -> Mapping[str, ServerConnection]:
        return self._servers

    async def listed(self, place: Place | None = None, person: Person | None = None,
                     ) -> list[ServerTool | ServerDown | NeedsConnecting]:
        """Each server's tools the policy keeps (where ``place`` may use them), or why a
        server could not list them; servers listed at once. A server people sign in to
        is listed as ``person`` (left out without one); one they have not connected to
        is ``NeedsConnecting``."""
        used = [name for name, entry in self.config.servers.items()
                if place is None or entry.used_in(place)]
        found = await asyncio.gather(*(self._listed_for(name, person) for name in used))
        return [item for items in found for item in items]

    async def offered(self, turn: Turn) -> list[Tool[Caller]]:
        """The tools this turn's model may call."""
        offered: list[Tool[Caller]] = []
        for item in await self.listed(turn.place, turn.person):
            if isinstance(item, ServerTool):
                offered.append(self._as_tool(item, turn))
            elif isinstance(item, NeedsConnecting):
                offered.append(self._connect_tool(item.server, turn))
        return offered

    async def aclose(self) -> None:
        personal, self._personal = list(self._personal.values()), OrderedDict()
        await asyncio.gather(*(server.aclose() for server in
                               [*self._servers.values(), *personal]))

    async def _listed_for(self, name: str, person: Person | None,
                          ) -> list[ServerTool | ServerDown | NeedsConnecting]:
        if name in self._servers:
            return await self._listed_of(self._servers[name])
        if person is None or person.user is None or self.connector is None:
            return []
        try:
            token = await self.connector.access_token(person.team, person.user, name)
        except ConnectRefused as failed:  # not lasting: the grant is kept for later
            log.warning("MCP server left out: %s", failed)
            return [ServerDown(str(failed))]
        if token is None:
            return [NeedsConnecting(name)]
        return await self._listed_of(self._personal_connection(name, person.team,
                                                               person.user))

    def _personal_connection(self, name: str, team: str, user: str) -> ServerConnection:
        assert self.connector is not None
        key = (team, user, name)
        found = self._personal.get(key)
        if found is None:
            entry = self.config.servers[name]
            assert entry.url is not None
            found = self._personal[key] = ServerConnection(
                name, entry, logs=self._logs,
                auth=PersonsToken(self.connector, team, user, name, entry.url))
            self._close_least_used(keeping=key)
        self._personal.move_to_end(key)
        return found

    def _close_least_used(self, *, keeping: tuple[str, str, str]) -> None:
        """Past ``PERSONAL_CONNECTIONS``, close the least lately used that no call is
        using (a turn mid-call keeps its own)."""
        idle = [key for key in self._personal
                if key != keeping and not self._in_use.get(key)]
        for key in idle[:max(0, len(self._personal) - PERSONAL_CONNECTIONS)]:
            closing = asyncio.get_running_loop().create_task(self._personal.pop(key).aclose())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def disconnected(self, team: str | None, user: str | None = None) -> None:
        """Close the open connections of a person (in ``team``, or every workspace when
        it is None) or of a workspace, who disconnected."""
        gone = [key for key in self._personal
                if (team is None or key[0] == team) and (user is None or key[1] == user)]
        for key in gone:
            await self._personal.pop(key).aclose()

    def _connect_tool(self, server: str, turn: Turn) -> Tool[Caller]:
        async def handle(caller: Caller, arguments: Arguments) -> Answer:
            return Answer((await connecting_of(turn).connect(server, turn)).told)

        return Tool(tool_name(server, CONNECT), (
            f"[{server}] {turn.user_name or 'The person'} has not connected their own"
            f" {server} account, which {server}'s tools act as. Call this when what they"
            f" ask needs {server}: they are sent a link to connect it, and the conversation"
            " goes on when they have."), {"type": "object", "properties": {}}, handle,
            step_title=f"Asking to connect {server}")

    async def _listed_of(self, server: ServerConnection,
                         ) -> list[ServerTool | ServerDown | NeedsConnecting]:
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
                                  action="tool.not_run", whose=self._whose(item.server, turn))
                raise BadInput(decision.told)
            return await self.run(item.server, item.tool.name, given, actor=caller.actor,
                                  how=decision.how, person=turn.person)

        description = (item.tool.description or item.tool.title or item.tool.name).strip()
        return Tool(item.name, f"[{item.server}] {description}",
                    dict(item.tool.input_schema) or {"type": "object"}, handle,
                    step_title=f"Using {item.server}: {item.tool.name}")

    async def run(self, server: str, tool: str, arguments: dict[str, Any], *, actor: str,
                  how: str, person: Person | None = None) -> Answer:
        """Call the tool now (its yes given), audit it, and return what the model reads
        (the text quoted, its images shown); ``BadInput`` with one line when it could not
        answer, the server's words in it quoted. ``person``: whose own account a server
        people sign in to is called with."""
        name = tool_name(server, tool)
        entry = self.config.servers.get(server)
        if entry is None:
            raise BadInput(f"{name}: the server {server} is no longer configured")
        whose = "with the operator's key"
        if entry.auth == "oauth":
            if person is None or person.user is None or self.connector is None:
                raise BadInput(f"{name} acts as the person who asks, and no one asked")
            key = (person.team, person.user, server)
            connection = self._personal_connection(server, person.team, person.user)
            whose = f"with {person.user}'s own account"
        else:
            key, connection = None, self._servers[server]
        try:
            result = await self._called(connection, key, tool, arguments)
        except ServerDown as down:
            await self._audit(actor, name, arguments, f"{how}; failed: {down}", whose=whose)
            raise BadInput(f"{quoted(str(down))}; go on without it") from down
        if entry.auth == "oauth" and person is not None and person.user is not None:
            team, user = person.team, person.user
            assert self.connector is not None
            await self.connector.store.run(lambda store: store.used(team, user, server))
        text = result_text(result)
        await self._audit(actor, name, arguments,
                          f"{how}; {'error, ' if result.is_error else ''}{len(text):,} characters",
                          whose=whose)
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

    async def _called(self, connection: ServerConnection, key: tuple[str, str, str] | None,
                      tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if key is None:
            return await connection.call(tool, arguments, self._timeout_s)
        self._in_use[key] = self._in_use.get(key, 0) + 1
        try:
            return await connection.call(tool, arguments, self._timeout_s)
        finally:
            self._in_use[key] -= 1
            if not self._in_use[key]:
                del self._in_use[key]

    def _whose(self, server: str, turn: Turn) -> str:
        """Whose rights a call of ``server`` acts with, as the audit log says it."""
        entry = self.config.servers.get(server)
        if entry is not None and entry.auth == "oauth":
            return f"with {turn.user or 'the asker'}'s own account"
        return "with the operator's key"

    async def _audit(self, actor: str, name: str, arguments: dict[str, Any], detail: str,
                     *, action: str = "tool.call", whose: str = "with the operator's key",
                     ) -> None:
        said = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        clipped = said if len(said) <= AUDITED_ARGUMENTS else said[:AUDITED_ARGUMENTS] + "…"
        await self.stores.run(lambda stores: stores.audit.record(
            actor=actor or "unknown", action=action, target=name,
            origin="conversation",
            detail=f"{detail}; {whose}; arguments {clipped}"))
