"""The person a web sign-in names — the console's session, or MCP's OAuth sign-in: the
operator (the one-time link, ``bridge/console/sign_in.py``) or a Slack member (Sign in with
Slack, ``bridge/slack_api/sign_in_with_slack.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPERATOR = "operator"


@dataclass(frozen=True)
class SignedInPerson:
    # "operator", or a Slack person ("T1:U1").
    actor: str
    name: str
    # Sees every place of every workspace (the operator's view, `thoth recall --all`).
    sees_everything: bool
    # May approve and reject what waits (FOUNDER_USER_IDS, and the operator).
    founder: bool
    # A Slack person's workspace and user id (None for the operator).
    team: str | None = None
    user: str | None = None

    def as_session(self) -> dict[str, Any]:
        return {"actor": self.actor, "name": self.name, "sees_everything": self.sees_everything,
                "founder": self.founder, "team": self.team, "user": self.user}


def user_of(session: dict[str, Any]) -> SignedInPerson | None:
    """The person a signed session cookie names, or None (signed out)."""
    actor, name = session.get("actor"), session.get("name")
    if not isinstance(actor, str) or not isinstance(name, str):
        return None
    team, user = session.get("team"), session.get("user")
    return SignedInPerson(actor, name, bool(session.get("sees_everything")),
                       bool(session.get("founder")), team if isinstance(team, str) else None,
                       user if isinstance(user, str) else None)
