"""Who says yes before a team's tool that may change something runs.

A tool the operator listed as read-only (``readOnly`` in ``mcp.json``) runs without
asking; so does one the person always allows (``bridge/team_tools/grants.py``). Every
other one is asked of the person whose turn it is (the MCP specification: a human
should always be able to deny a tool call), each surface its own way (``Approvals``,
carried by the turn): the terminal with a y/N line; Slack with a card only that person
may answer, after which the call runs and the conversation goes on in a turn of its own
(``bridge/slack/tool_approvals.py``). Where no one can be asked, the call does not run
and the model is told why.

Decided: a call whose arguments hold what looks like a secret is never run nor asked
about (and so never kept with a waiting ask): a token belongs in the server's entry of
``mcp.json``, not in words a model passes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bridge.pipeline.turn import Turn


@dataclass(frozen=True)
class AskedCall:
    """A call waiting for a yes: which server's tool, with which arguments."""

    server: str
    tool: str
    arguments: dict[str, Any]

    @property
    def name(self) -> str:
        """The name the model called it by (``SERVER__tool``)."""
        return f"{self.server}__{self.tool}"


@dataclass(frozen=True)
class Decision:
    """A person's answer: whether the call runs, what the model is told when it does
    not, and how it was decided (the audit log's words)."""

    allowed: bool
    told: str = ""
    how: str = ""
    # "Always allow": the person lets this tool run in their turns from now on.
    always: bool = False


@runtime_checkable
class Approvals(Protocol):
    async def ask(self, call: AskedCall, turn: Turn) -> Decision: ...


class NoOneToAsk:
    """Where no person can be asked: a tool that may change something never runs."""

    async def ask(self, call: AskedCall, turn: Turn) -> Decision:
        return Decision(False, f"{call.name} may change something, so a person must allow it"
                               " first, and no one can be asked here: it did not run. Tell"
                               " the person what you would have done.", "no one to ask")


def approvals_of(turn: Turn) -> Approvals:
    """How the turn's transport asks its speaker (no one, where it cannot)."""
    return turn.approvals if isinstance(turn.approvals, Approvals) else NoOneToAsk()
