"""Who is signed in: the session cookie's person, and the one-time operator link.

Decided: the local operator signs in as Jupyter does — a link with a one-time token is
printed where the console starts, and opening it sets the signed session cookie. The
token works once and for ``LINK_TTL_S``; a new start prints a new one. Team members sign
in with Slack (``slack_sign_in.py``).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LINK_TTL_S = 15 * 60
OPERATOR = "operator"


@dataclass(frozen=True)
class ConsoleUser:
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


def user_of(session: dict[str, Any]) -> ConsoleUser | None:
    """The person a signed session cookie names, or None (signed out)."""
    actor, name = session.get("actor"), session.get("name")
    if not isinstance(actor, str) or not isinstance(name, str):
        return None
    team, user = session.get("team"), session.get("user")
    return ConsoleUser(actor, name, bool(session.get("sees_everything")),
                       bool(session.get("founder")), team if isinstance(team, str) else None,
                       user if isinstance(user, str) else None)


class OneTimeLogin:
    """The operator's sign-in link: one token, usable once, until it lapses."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._token: str | None = secrets.token_urlsafe(32)
        self._issued_at = clock()

    @property
    def token(self) -> str | None:
        return self._token

    def redeem(self, offered: str) -> ConsoleUser | None:
        """The operator, once, for the right token in time; None for anything else."""
        token = self._token
        if token is None or self._clock() - self._issued_at > LINK_TTL_S:
            return None
        if not hmac.compare_digest(offered.encode(), token.encode()):
            return None
        self._token = None
        return ConsoleUser(OPERATOR, "the operator", sees_everything=True, founder=True)
