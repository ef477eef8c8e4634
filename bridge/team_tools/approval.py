"""Who says yes before a team's tool that may change something runs.

A tool the operator listed as read-only (``readOnly`` in ``mcp.json``) runs without
asking; every other one is asked of a person first (the MCP specification: a human
should always be able to deny a tool call). Each surface asks its own way (``Approvals``):
the terminal with a y/N line, Slack with a card that only the person whose turn it is may
answer. Where no one can be asked, the call does not run and the model is told why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bridge.pipeline.turn import Turn
from bridge.team_tools.config import tool_name


@dataclass(frozen=True)
class AskedCall:
    """A call waiting for a yes: which server's tool, with which arguments."""

    server: str
    tool: str
    arguments: dict[str, Any]

    @property
    def name(self) -> str:
        return tool_name(self.server, self.tool)


@dataclass(frozen=True)
class Decision:
    """A person's answer: whether the call runs, what the model is told when it does
    not, and how it was decided (the audit log's words)."""

    allowed: bool
    told: str = ""
    how: str = ""


class Approvals(Protocol):
    async def ask(self, call: AskedCall, turn: Turn) -> Decision: ...


class NoOneToAsk:
    """Where no person can be asked: a tool that may change something never runs."""

    async def ask(self, call: AskedCall, turn: Turn) -> Decision:
        return Decision(False, f"{call.name} may change something, so a person must allow it"
                               " first, and no one can be asked here: it did not run. Tell"
                               " the person what you would have done.", "no one to ask")
