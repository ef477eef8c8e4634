"""The OAuth ``state`` of each install on its way: issued when "Add to Slack" is shown,
used once when Slack sends the browser back, lapsing after ``STATE_TTL_S``.

Kept by a hash (a leaked table lets no one finish another's install) in the database,
not in memory: Slack's redirect may land on another replica. Bolt also binds the state
to the browser with a cookie; this is the server's half of that check, which a replayed
or forged state fails.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from layers.shared.storage.database import Database

# Slack's own codes last ten minutes; an install page left open longer starts again.
STATE_TTL_S = 600.0


class OAuthStates:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def issue(self) -> str:
        state = secrets.token_urlsafe(32)
        now = self._clock()
        with self._db.write() as conn:
            # Lapsed states go as new ones come: nothing else ever reads them.
            conn.execute("DELETE FROM slack_oauth_states WHERE expires_at <= ?", (now,))
            conn.execute("INSERT INTO slack_oauth_states (state_hash, expires_at)"
                         " VALUES (?, ?)", (_hashed(state), now + STATE_TTL_S))
        return state

    def consume(self, state: str) -> bool:
        """Whether ``state`` was issued here, is live and was not used; it is used now."""
        with self._db.write() as conn:
            row = conn.execute("DELETE FROM slack_oauth_states WHERE state_hash = ?"
                               " AND expires_at > ? RETURNING state_hash",
                               (_hashed(state), self._clock())).fetchone()
        return row is not None


def _hashed(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()
