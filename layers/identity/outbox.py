"""Turns waiting for the identity backend, in the database: a restart or a crash loses none.

Written (redacted, like everything Thoth stores) when a turn is handed to the ingest
queue, deleted once the backend has it or has refused it for good. A row is held by
the process sending it (``claimed_until``), so replicas and workers sharing the
database never send one turn twice at once; a row whose sender died, or whose retry
time has come, is free again once its hold runs out.

A person's turns go in the order they were said (a later "I prefer X" supersedes an
earlier one): a claim never takes a turn while an earlier turn of the same person waits
for its retry (it failed, ``attempts`` > 0, and is held until its retry time). A turn held
by the process sending it right now does not hold back the next: each sender sends its
own claims in id order, and the turns of one person that two senders hold at once (two
replicas, each with its own) were never ordered between them. A turn held for a forget's
sweep needs no rule: the person's later turns are held for the same sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from layers.identity.protocol import Person, TurnMessages
from layers.shared.redaction import redact
from layers.shared.storage.database import Database

Clock = Callable[[], float]
_COLUMNS = 'id, team, "user", user_name, session_id, user_text, reply_text, said_at, attempts'


class IngestOutbox:
    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self._db = db
        self._clock = clock

    def add(self, turn: TurnMessages, *, hold_s: float | None = None) -> int:
        """Keep ``turn`` until it is sent; ``hold_s``: this process sends it (held that
        long), None: any worker may claim it at once."""
        now = self._clock()
        with self._db.write() as conn:
            cursor = conn.execute(
                'INSERT INTO identity_outbox (team, "user", user_name, session_id, user_text,'
                " reply_text, said_at, queued_at, claimed_until)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    turn.person.team,
                    turn.person.user,
                    turn.person.name,
                    turn.session_id,
                    redact(turn.user_text),
                    redact(turn.reply_text),
                    turn.at,
                    now,
                    None if hold_s is None else now + hold_s,
                ),
            )
            return int(cursor.fetchone()[0])

    def claim(self, *, hold_s: float, limit: int = 1000) -> list[tuple[int, TurnMessages]]:
        """Take up to ``limit`` free turns, oldest first, held for ``hold_s``. A turn that
        was tried before comes marked ``retry`` (the backend may hold it already)."""
        now = self._clock()
        with self._db.claim() as conn:
            rows = conn.execute(
                "UPDATE identity_outbox SET claimed_until = ? WHERE id IN (SELECT id FROM"
                " identity_outbox AS later WHERE (claimed_until IS NULL OR claimed_until < ?)"
                " AND NOT EXISTS (SELECT 1 FROM identity_outbox AS earlier"
                " WHERE earlier.team = later.team AND earlier.\"user\" = later.\"user\""
                " AND earlier.id < later.id AND earlier.attempts > 0"
                " AND earlier.claimed_until >= ?)"
                f" ORDER BY id LIMIT ?{self._db.skip_locked}) RETURNING {_COLUMNS}",
                (now + hold_s, now, now, limit),
            ).fetchall()
        return sorted((_entry(row) for row in rows), key=lambda entry: entry[0])

    def retry_later(self, entry_id: int, delay_for: Callable[[int], float]) -> float:
        """Sending failed: count it, and hold the turn for ``delay_for(failures so far)``
        seconds, which is returned (0 when the turn is gone)."""
        with self._db.write() as conn:
            row = conn.execute(
                "UPDATE identity_outbox SET attempts = attempts + 1 WHERE id = ?"
                " RETURNING attempts",
                (entry_id,),
            ).fetchone()
            if row is None:
                return 0.0
            delay = delay_for(int(row[0]))
            conn.execute(
                "UPDATE identity_outbox SET claimed_until = ? WHERE id = ?",
                (self._clock() + delay, entry_id),
            )
        return delay

    def hold(self, entry_id: int, until: float) -> None:
        """Keep the turn unsent until ``until`` (its person's forget is being swept)."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE identity_outbox SET claimed_until = ? WHERE id = ?", (until, entry_id)
            )

    def release(self, entry_id: int) -> None:
        """The holder will not send it: free at once for the next claim."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE identity_outbox SET claimed_until = NULL WHERE id = ?", (entry_id,)
            )

    def release_all(self, entry_ids: list[int]) -> None:
        """Free a batch's unsent turns (the sender stopped at a failure, to keep order)."""
        if not entry_ids:
            return
        with self._db.write() as conn:
            conn.execute(
                "UPDATE identity_outbox SET claimed_until = NULL WHERE id IN"
                f" ({', '.join('?' for _ in entry_ids)})",
                tuple(entry_ids),
            )

    def remove(self, entry_id: int) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM identity_outbox WHERE id = ?", (entry_id,))

    def count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM identity_outbox").fetchone()[0])


def _entry(row: Any) -> tuple[int, TurnMessages]:
    person = Person(row[1], row[2], row[3])
    # A turn tried before may be held by the backend already (the try timed out).
    turn = TurnMessages(person, row[4], row[5], row[6], float(row[7]), retry=int(row[8]) > 0)
    return int(row[0]), turn
