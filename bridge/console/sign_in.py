"""Who is signed in: the session cookie's person, and the one-time operator link.

Decided: the local operator signs in as Jupyter does — a link with a one-time token is
printed where the console starts, and opening it sets the signed session cookie. The
token works once and for ``LINK_TTL_S``; a new start prints a new one. Team members sign
in with Slack (``bridge/slack_api/sign_in_with_slack.py``).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable

from bridge.access.signed_in import OPERATOR, SignedInPerson

LINK_TTL_S = 15 * 60


class OneTimeLogin:
    """The operator's sign-in link: one token, usable once, until it lapses."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._token: str | None = secrets.token_urlsafe(32)
        self._issued_at = clock()

    @property
    def token(self) -> str | None:
        return self._token

    def redeem(self, offered: str) -> SignedInPerson | None:
        """The operator, once, for the right token in time; None for anything else."""
        token = self._token
        if token is None or self._clock() - self._issued_at > LINK_TTL_S:
            return None
        if not hmac.compare_digest(offered.encode(), token.encode()):
            return None
        self._token = None
        return SignedInPerson(OPERATOR, "the operator", sees_everything=True, founder=True)
