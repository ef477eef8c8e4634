"""The queue of turns to answer once the model is back, in the database every replica
shares (``answer_later_tables.py``).

A row is taken (``claim``) by one process at a time, for ``hold_s``: a process that dies
answering lets it go when the hold runs out, and another answers it (the transcript tells
whether the dead one had got that far: ``answer_later.py``). Rows of one conversation are
taken in the order they were queued, one at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from layers.shared.storage.database import Database

Clock = Callable[[], float]


@dataclass(frozen=True)
class Waiting:
    id: int
    session_key: str
    turn: dict[str, Any]
    tries: int  # failures other than the model's overload


class AnswerLaterStore:
    def __init__(self, db: Database, *, owner: str, clock: Clock = time.time) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock

    def add(self, event_key: str, session_key: str, turn: dict[str, Any], *,
            team: str = "", user: str = "") -> bool:
        """Queue ``turn`` (said by ``user`` of ``team``); False when the same delivery was
        queued before (a replica that died telling it, a delivery taken over)."""
        now = self._clock()
        with self._db.write() as conn:
            cursor = conn.execute(
                'INSERT INTO answer_later (event_key, session_key, team, "user", turn,'
                " queued_at, not_before) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (event_key) DO NOTHING",
                (event_key, session_key, team, user, json.dumps(turn, sort_keys=True), now,
                 now),
            )
        return cursor.rowcount == 1

    def waiting_before(self, session_key: str, before: int | None = None) -> bool:
        """Whether a turn of this conversation waits (queued before row ``before``)."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM answer_later WHERE session_key = ? AND id < ? LIMIT 1",
                (session_key, before if before is not None else 2**62),
            ).fetchone()
        return row is not None

    def claim(self, *, limit: int, hold_s: float) -> list[Waiting]:
        """Take up to ``limit`` due rows no one holds, each the oldest of its
        conversation, oldest first."""
        now = self._clock()
        with self._db.claim() as conn:
            rows = conn.execute(
                "UPDATE answer_later SET owner = ?, held_until = ? WHERE id IN ("
                "SELECT id FROM answer_later AS w WHERE not_before <= ?"
                " AND (held_until IS NULL OR held_until < ?)"
                " AND NOT EXISTS (SELECT 1 FROM answer_later AS e"
                " WHERE e.session_key = w.session_key AND e.id < w.id)"
                f" ORDER BY id LIMIT ?{self._db.skip_locked})"
                " RETURNING id, session_key, turn, tries",
                (self._owner, now + hold_s, now, now, limit),
            ).fetchall()
        found = [Waiting(int(r[0]), str(r[1]), json.loads(r[2]), int(r[3])) for r in rows]
        return sorted(found, key=lambda waiting: waiting.id)

    def again_at(self, entry_id: int, when: float, *, failed: bool = False) -> None:
        """Not answered this time: free again at ``when``. ``failed``: for another
        reason than the model's overload (counted in ``tries``)."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE answer_later SET held_until = NULL, owner = NULL, not_before = ?,"
                " tries = tries + ? WHERE id = ? AND owner = ?",
                (when, int(failed), entry_id, self._owner),
            )

    def done(self, entry_id: int) -> None:
        """Delete a row this process holds (one another process took over after its hold
        ran out is that process's to finish)."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM answer_later WHERE id = ? AND owner = ?",
                         (entry_id, self._owner))

    def waiting(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM answer_later").fetchone()[0])
