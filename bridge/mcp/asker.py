"""Who asks through MCP, and what they may read.

Over stdio the operator names the person (``thoth mcp --team T --user U``) or it is the
terminal's own user, as in ``thoth chat``. Over HTTP it is the holder of the request's
token (``http.py``). Either reads as they would in a DM with Thoth: their own DMs and
the public channels of their workspace — the rule of every Slack turn
(``layers/shared/places``) — and, over HTTP, the private channels, group DMs and channels
shared across their Enterprise Grid org that Slack says they are in (``memberships``,
asked as the console asks). Over stdio none: a stdio server has
no token to tie the person to, so it does not vouch for memberships. Decided: none
rather than unchecked ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bridge.pipeline.tools import Caller
from layers.identity.known_as import known_as
from layers.identity.protocol import Person
from layers.shared.audit import slack_actor
from layers.shared.places import LOCAL_TEAM, TERMINAL_CHANNEL, Viewer
from layers.shared.places.memberships import NONE, Memberships

# Where an MCP asker's DM-with-Thoth view is asked from (no Slack channel of its own).
MCP_CHANNEL = "mcp"


@dataclass(frozen=True)
class Asker:
    team: str
    user: str
    # What Slack says they are in (HTTP only).
    memberships: Memberships = NONE

    @property
    def member_of(self) -> frozenset[str]:
        """The private channels and group DMs they are in."""
        return self.memberships.private

    @property
    def local(self) -> bool:
        """The terminal's own user (no Slack workspace named)."""
        return self.team == LOCAL_TEAM

    @property
    def viewer(self) -> Viewer:
        channel = TERMINAL_CHANNEL if self.local else MCP_CHANNEL
        return self.memberships.viewer(self.team, channel, self.user)

    @property
    def person(self) -> Person:
        return Person(self.team, self.user)

    @property
    def actor(self) -> str:
        """As the audit log names them."""
        return f"local:{self.user}" if self.local else slack_actor(self.user)


def caller_of(asker: Asker, origin: str) -> Caller:
    """The asker as a shared tool sees them: reading as in their DM with Thoth."""
    person = asker.person
    return Caller(asker.viewer, person=person,
                  known_as=tuple(known_as(person, asker.memberships.org)),
                  actor=asker.actor, origin=origin, at=time.time())
