"""How a person is asked to connect their own account on a remote server a turn wants.

Slack sends the person, in the thread, a link only they see: it opens the console,
which runs the sign-in (``bridge/connections/``), and the conversation goes on in a
turn of its own once they have connected (``bridge/slack/connect_links.py``). Where no
one can be sent a link (the terminal, a turn without a speaker), the model is told so.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from bridge.pipeline.tools.approvals import Decision
from bridge.pipeline.turn import Turn


@runtime_checkable
class Connecting(Protocol):
    async def connect(self, server: str, turn: Turn) -> Decision: ...


class NoWayToConnect:
    async def connect(self, server: str, turn: Turn) -> Decision:
        return Decision(False, (
            f"{server} acts as each person with their own account, and no link to connect"
            " one can be sent here: its tools cannot be used in this conversation. Say so;"
            f" they can connect {server} in Thoth's console (Connections), then ask again."),
            "no way to connect")


def connecting_of(turn: Turn) -> Connecting:
    """How the turn's transport asks its speaker to connect (no way, where it cannot)."""
    return turn.approvals if isinstance(turn.approvals, Connecting) else NoWayToConnect()
