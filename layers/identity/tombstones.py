"""A person's "forget me", remembered: what they said before it never reaches identity again.

Forgetting stops ingest first. Their turns waiting in the outbox are deleted with the
tombstone, in one transaction, and a turn said before the forget (queued, retried, or the
"forget me" turn itself, whose ingest comes after its reply) is dropped when it comes
up. Turns said after it are learned as usual: the person is talking to Thoth again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from layers.identity.protocol import Person, TurnMessages
from layers.storage.database import Database


class Tombstones:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def record(self, person: Person) -> float:
        """Stop ingest for ``person`` now; returns the moment. Their queued turns go."""
        now = self._clock()
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO identity_forgotten (team, "user", forgotten_at) VALUES (?, ?, ?)'
                ' ON CONFLICT (team, "user") DO UPDATE SET forgotten_at = excluded.forgotten_at',
                (person.team, person.user, now),
            )
            conn.execute(
                'DELETE FROM identity_outbox WHERE team = ? AND "user" = ? AND said_at <= ?',
                (person.team, person.user, now),
            )
        return now

    def forgotten_at(self, person: Person) -> float | None:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT forgotten_at FROM identity_forgotten WHERE team = ? AND "user" = ?',
                (person.team, person.user),
            ).fetchone()
        return None if row is None else float(row[0])

    def buried(self, turn: TurnMessages) -> bool:
        """Whether the turn was said before its person asked to be forgotten."""
        forgotten = self.forgotten_at(turn.person)
        return forgotten is not None and turn.at <= forgotten
