"""Turns waiting for the identity backend, in SQLite: a restart or a crash loses none.

Written (redacted, like everything Thoth stores) when a turn is handed to the ingest
queue, deleted once the backend has it or has refused it for good.
"""

from __future__ import annotations

import time

from layers.identity.protocol import Person, TurnMessages
from layers.redaction import redact
from layers.storage.database import Database


class IngestOutbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, turn: TurnMessages) -> int:
        with self._db.write() as conn:
            cursor = conn.execute(
                'INSERT INTO identity_outbox (team, "user", user_name, session_id, user_text,'
                " reply_text, said_at, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    turn.person.team,
                    turn.person.user,
                    turn.person.name,
                    turn.session_id,
                    redact(turn.user_text),
                    redact(turn.reply_text),
                    turn.at,
                    time.time(),
                ),
            )
            return int(cursor.fetchone()[0])

    def pending(self) -> list[tuple[int, TurnMessages]]:
        """Every waiting turn, oldest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                'SELECT id, team, "user", user_name, session_id, user_text, reply_text, said_at'
                " FROM identity_outbox ORDER BY id"
            ).fetchall()
        return [
            (int(row[0]), TurnMessages(Person(row[1], row[2], row[3]), row[4], row[5], row[6],
                                       float(row[7])))
            for row in rows
        ]

    def remove(self, entry_id: int) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM identity_outbox WHERE id = ?", (entry_id,))

    def count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM identity_outbox").fetchone()[0])
