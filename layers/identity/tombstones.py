"""A person's "forget me", remembered: what they said before it never reaches identity again.

Forgetting stops ingest first. Their turns waiting in the outbox are deleted with the
tombstone, in one transaction, and a turn said before the forget (queued, retried, or the
"forget me" turn itself, whose ingest comes after its reply) is dropped when it comes
up. Turns said after it are learned as usual: the person is talking to Thoth again.

A backend that derives facts later (Honcho's deriver batches a conversation's messages
for up to half an hour) can still make facts, after the forget, from what they said
before it in a conversation shared with others (Honcho keeps those messages). Such a
backend has a settling time (``settle_s``): when it has passed, the sweep
(``forget_sweep.py``) deletes every fact about the person made since the forget. So that
the sweep deletes only those, what the person says after the forget waits in the outbox
until the sweep is done, and observations about them are not written meanwhile. A
backend that derives nothing later (the local one) settles at once: nothing waits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from layers.identity.protocol import Person, TurnMessages
from layers.shared.storage.database import Database


@dataclass(frozen=True)
class Fate:
    """What becomes of a turn on its way to the identity backend."""

    dropped: bool = False  # said before its person asked to be forgotten
    wait_until: float | None = None  # said after, before the forget's sweep: it waits


SEND = Fate()
DROP = Fate(dropped=True)
# A turn whose forget's sweep is overdue (no process has run it yet) waits this long
# before it is looked at again. Holds for sending are longer (ingest_queue, worker), so a
# row held no later than this from now is one waiting for a sweep.
RECHECK_S = 60.0


@dataclass(frozen=True)
class Unswept:
    person: Person
    forgotten_at: float
    sweep_at: float


class Tombstones:
    def __init__(
        self, db: Database, *, settle_s: float = 0.0, clock: Callable[[], float] = time.time
    ) -> None:
        self._db = db
        self._settle_s = settle_s
        self._clock = clock

    def record(self, person: Person) -> float:
        """Stop ingest for ``person`` now; returns the moment. Their queued turns go."""
        now = self._clock()
        swept = now if self._settle_s <= 0 else None
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO identity_forgotten (team, "user", forgotten_at, sweep_at, swept_at)'
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (team, \"user\") DO UPDATE SET"
                " forgotten_at = excluded.forgotten_at, sweep_at = excluded.sweep_at,"
                " swept_at = excluded.swept_at",
                (person.team, person.user, now, now + self._settle_s, swept),
            )
            conn.execute(
                'DELETE FROM identity_outbox WHERE team = ? AND "user" = ? AND said_at <= ?',
                (person.team, person.user, now),
            )
        return now

    def forgotten_at(self, person: Person) -> float | None:
        stone = self._stone(person)
        return None if stone is None else stone[0]

    def unswept(self, person: Person) -> Unswept | None:
        """The person's forget whose sweep has not run yet, if any."""
        stone = self._stone(person)
        if stone is None or stone[2] is not None:
            return None
        return Unswept(person, stone[0], stone[1])

    def fate(self, turn: TurnMessages) -> Fate:
        stone = self._stone(turn.person)
        if stone is None:
            return SEND
        forgotten_at, sweep_at, swept_at = stone
        if turn.at <= forgotten_at:
            return DROP
        if swept_at is not None:
            return SEND
        return Fate(wait_until=sweep_at if sweep_at > self._clock() else self._clock() + RECHECK_S)

    def said_before_forget(self, person: Person, said_at: float) -> bool:
        """Whether words said at ``said_at`` come from before the person's forget, or the
        forget's sweep is still to run (what is written now would be swept)."""
        stone = self._stone(person)
        return stone is not None and (said_at <= stone[0] or stone[2] is None)

    def due(self) -> list[Unswept]:
        """Forgets whose settling time is over and whose sweep has not run."""
        with self._db.read() as conn:
            rows = conn.execute(
                'SELECT team, "user", forgotten_at, sweep_at FROM identity_forgotten'
                " WHERE swept_at IS NULL AND sweep_at <= ?",
                (self._clock(),),
            ).fetchall()
        return [Unswept(Person(row[0], row[1]), float(row[2]), float(row[3])) for row in rows]

    def mark_swept(self, stone: Unswept) -> None:
        """The sweep of ``stone`` ran (a newer forget of the same person is left due): the
        turns that waited for it are free to be sent at once."""
        now = self._clock()
        with self._db.write() as conn:
            conn.execute(
                'UPDATE identity_forgotten SET swept_at = ? WHERE team = ? AND "user" = ?'
                " AND forgotten_at = ?",
                (now, stone.person.team, stone.person.user, stone.forgotten_at),
            )
            conn.execute(
                "UPDATE identity_outbox SET claimed_until = NULL WHERE team = ? AND"
                ' "user" = ? AND said_at > ? AND claimed_until <= ?',
                (stone.person.team, stone.person.user, stone.forgotten_at,
                 max(now + RECHECK_S, stone.sweep_at)),
            )

    def _stone(self, person: Person) -> tuple[float, float, float | None] | None:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT forgotten_at, sweep_at, swept_at FROM identity_forgotten'
                ' WHERE team = ? AND "user" = ?',
                (person.team, person.user),
            ).fetchone()
        if row is None:
            return None
        return float(row[0]), float(row[1]), None if row[2] is None else float(row[2])
