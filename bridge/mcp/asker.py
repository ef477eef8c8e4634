"""Who asks through MCP, and what they may read.

Over stdio the operator names the person (``thoth mcp --team T --user U``) or it is the
terminal's own user, as in ``thoth chat``. Either reads as they would in a DM with
Thoth: their own DMs and the public channels of their workspace — the rule of every
Slack turn (``layers/places``). Private channels and group DMs are not read over stdio
yet: their membership is Slack's to say (the console asks ``users.conversations``), and
a stdio server has no Slack sign-in to trust. Decided: none rather than unchecked ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from layers.audit.log import slack_actor
from layers.identity.protocol import Person
from layers.places import LOCAL_TEAM, TERMINAL_CHANNEL, Viewer

# Where an MCP asker's DM-with-Thoth view is asked from (no Slack channel of its own).
MCP_CHANNEL = "mcp"


@dataclass(frozen=True)
class Asker:
    team: str
    user: str

    @property
    def local(self) -> bool:
        """The terminal's own user (no Slack workspace named)."""
        return self.team == LOCAL_TEAM

    @property
    def viewer(self) -> Viewer:
        channel = TERMINAL_CHANNEL if self.local else MCP_CHANNEL
        return Viewer(self.team, channel, "im", self.user)

    @property
    def person(self) -> Person:
        return Person(self.team, self.user)

    @property
    def actor(self) -> str:
        """As the audit log names them."""
        return f"local:{self.user}" if self.local else slack_actor(self.user)
