"""The team's MCP tools as a turn offers them: ``SERVER__tool``, where the place allows,
as the policy keeps them, run with a timeout, their results capped and quoted.

A server that cannot be reached is left out of that turn (logged; the turn goes on). A
tool the operator did not list as read-only is asked of a person before it runs
(``approval.py``); until one says yes it does not run, and the model is told so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import mcp_types as types

from bridge.pipeline.tools import Answer, Caller, Tool
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.turn import Turn
from bridge.team_tools.approval import Approvals, AskedCall
from bridge.team_tools.config import TeamToolsConfig, tool_name
from bridge.team_tools.connection import ServerConnection, ServerDown
from bridge.team_tools.results import result_text
from layers.shared.errors import BadInput
from layers.shared.places import Place

log = logging.getLogger(__name__)

# How long listing one server's tools may hold a turn back (its first turn: connecting).
LISTING_DEADLINE_S = 10.0


@dataclass(frozen=True)
class ServerTool:
    """One tool of one server, as the policy sees it."""

    server: str
    tool: types.Tool
    read_only: bool

    @property
    def name(self) -> str:
        return tool_name(self.server, self.tool.name)


class TeamTools:
    """Every server of the team's ``mcp.json``, connected when first used."""

    def __init__(self, config: TeamToolsConfig, approvals: Approvals, *, timeout_s: float,
                 logs: Path | None = None) -> None:
        self.config = config
        self._approvals = approvals
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
        server = self._servers[item.server]
        approvals, timeout_s = self._approvals, self._timeout_s

        async def handle(caller: Caller, arguments: Arguments) -> Answer:
            given = arguments.given
            if not item.read_only:
                decision = await approvals.ask(AskedCall(item.server, item.tool.name, given),
                                               turn)
                if not decision.allowed:
                    raise BadInput(decision.told)
            try:
                result = await server.call(item.tool.name, given, timeout_s)
            except ServerDown as down:
                raise BadInput(f"{down}; go on without it") from down
            text = result_text(result)
            if result.is_error:
                raise BadInput(f"{item.name} answered with an error: {text}")
            return Answer(text)

        description = (item.tool.description or item.tool.title or item.tool.name).strip()
        return Tool(item.name, f"[{item.server}] {description}",
                    dict(item.tool.input_schema) or {"type": "object"}, handle,
                    step_title=f"Using {item.server}: {item.tool.name}")


def names(tools: Sequence[Tool[Caller]]) -> list[str]:
    return [tool.name for tool in tools]
