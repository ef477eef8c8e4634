"""The session transcript: every turn, redacted, in the database."""

from __future__ import annotations

import time
from dataclasses import dataclass

from layers.shared.redaction import redact
from layers.shared.storage.database import Database


@dataclass(frozen=True)
class TranscriptTurn:
    """One human message and the agent's reply (``ok`` is False if the reply failed)."""

    user_text: str
    reply_text: str
    ok: bool = True
    user: str | None = None
    user_name: str | None = None
    created_at: float = 0.0


class TranscriptStore:
    """Appends turns to a session's transcript and reads them back in order."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, session_id: str, turn: TranscriptTurn) -> int:
        """Store ``turn`` (redacted) as the session's next turn; returns its number.

        A turn already the session's latest (the same words at the same moment) is not
        stored again: a write retried after its commit's answer was lost with the
        connection (a database restart) would otherwise store it twice.
        """
        created_at = turn.created_at or time.time()
        said = redact(turn.user_text)
        with self._db.write() as conn:
            latest = conn.execute(
                "SELECT seq, user_text, created_at FROM transcript_turns WHERE session_id = ?"
                " ORDER BY seq DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            if latest is not None and str(latest[1]) == said and float(latest[2]) == created_at:
                return int(latest[0])
            seq = 1 if latest is None else int(latest[0]) + 1
            conn.execute(
                'INSERT INTO transcript_turns (session_id, seq, "user", user_name, user_text,'
                " reply_text, ok, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    seq,
                    turn.user,
                    turn.user_name,
                    said,
                    redact(turn.reply_text),
                    int(turn.ok),
                    created_at,
                ),
            )
        return seq

    def turns(self, session_id: str) -> list[TranscriptTurn]:
        with self._db.read() as conn:
            rows = conn.execute(
                'SELECT user_text, reply_text, ok, "user", user_name, created_at'
                " FROM transcript_turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [
            TranscriptTurn(str(text), str(reply), bool(ok), user, name, float(at))
            for text, reply, ok, user, name, at in rows
        ]

    def last_user_text(self, session_id: str) -> str | None:
        """What the person said in the session's latest turn (stored redacted)."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT user_text FROM transcript_turns WHERE session_id = ?"
                " ORDER BY seq DESC LIMIT 1",
                (session_id,),
            ).fetchone()
        return None if row is None else str(row[0])

    def forget_turn(self, session_id: str, created_at: float, user_text: str) -> int:
        """Delete the turn an episode was made from (🗑️): never replayed, never reflected
        on again. Returns how many rows went (0 when it was gone already)."""
        with self._db.write() as conn:
            deleted = conn.execute(
                "DELETE FROM transcript_turns WHERE session_id = ? AND created_at = ?"
                " AND user_text = ?",
                (session_id, created_at, redact(user_text)),
            ).rowcount
            # What the model saw at the session's latest turn may quote it.
            conn.execute("DELETE FROM session_contexts WHERE session_id = ?", (session_id,))
        return int(deleted or 0)

    def took_part(self, session_id: str, user: str) -> bool:
        """Whether ``user`` said anything in the session (a session nobody spoke in is
        nobody's: anyone may end it)."""
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT COUNT(*), SUM(CASE WHEN "user" = ? THEN 1 ELSE 0 END)'
                " FROM transcript_turns WHERE session_id = ?",
                (user, session_id),
            ).fetchone()
        return int(row[0]) == 0 or int(row[1] or 0) > 0

    def count(self, session_id: str) -> int:
        with self._db.read() as conn:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM transcript_turns WHERE session_id = ?", (session_id,)
            ).fetchone()
        return int(count)
