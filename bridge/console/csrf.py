"""A token per session, sent back with every change: a page of another site cannot post
a form here in the signed-in person's name (it cannot read the token)."""

from __future__ import annotations

import hmac
import secrets
from typing import Any

SESSION_KEY = "csrf"
FIELD = "csrf_token"


def token_for(session: dict[str, Any]) -> str:
    token = session.get(SESSION_KEY)
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session[SESSION_KEY] = token
    return token


def sent_back(session: dict[str, Any], offered: object) -> bool:
    token = session.get(SESSION_KEY)
    return (isinstance(token, str) and isinstance(offered, str)
            and hmac.compare_digest(token.encode(), offered.encode()))
