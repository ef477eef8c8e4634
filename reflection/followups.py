"""Follow-ups reflection schedules ("check back on this"): one per session, persisted.

Reflection writes them; the Slack bridge posts them when due and cancels them when
someone asks in the thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from layers.shared.places import LOCAL_TEAM
from layers.shared.storage.database import Database
from layers.working.sessions import Session


@dataclass(frozen=True)
class Followup:
    session_id: str
    channel: str
    thread_ts: str | None
    text: str
    # The workspace it is posted in (whose install's token posts it).
    team: str


# Pending, due, in Slack (not the terminal), and held by no process.
_DUE = (
    "state = 'pending' AND due_at <= ? AND team != ?"
    " AND (claimed_until IS NULL OR claimed_until < ?)"
)


class Followups:
    def __init__(self, db: Database) -> None:
        self._db = db

    def schedule(self, session: Session, text: str, *, due_at: float, now: float) -> None:
        """Plan the session's follow-up; a second call for the session changes nothing."""
        place = session.place
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO followups (session_id, team, channel, thread_ts, text,"
                " due_at, state, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)"
                " ON CONFLICT (session_id) DO NOTHING",
                (session.id, place.team, place.channel, place.thread_ts, text, due_at, now),
            )

    def claim_due(self, now: float, *, hold_s: float, limit: int = 20) -> list[Followup]:
        """Take up to ``limit`` due follow-ups to post, held for ``hold_s``: another
        process (a replica, a worker) passes over them, and a process that dies
        posting them lets them go when the hold runs out."""
        with self._db.claim() as conn:
            rows = conn.execute(
                "UPDATE followups SET claimed_until = ? WHERE session_id IN ("
                f" SELECT session_id FROM followups WHERE {_DUE} ORDER BY due_at LIMIT ?"
                f"{self._db.skip_locked}) RETURNING session_id, channel, thread_ts, text, team",
                (now + hold_s, now, LOCAL_TEAM, now, limit),
            ).fetchall()
        return [Followup(*row) for row in rows]

    def retry_at(self, session_id: str, moment: float) -> None:
        """Posting failed: hold the follow-up until ``moment``, then it is due again."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE followups SET claimed_until = ? WHERE session_id = ?",
                (moment, session_id),
            )

    def open_for(
        self, *, team: str, user: str, dm_channel: str, shared_channel: str | None, limit: int
    ) -> list[Followup]:
        """Pending follow-ups of conversations ``user`` took part in that they may read
        from their DM with the agent: in public channels of the workspace, in this DM,
        or in ``shared_channel`` (a private channel they are looking at), soonest first."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT f.session_id, f.channel, f.thread_ts, f.text, f.team FROM followups f"
                " JOIN sessions s ON s.id = f.session_id"
                " WHERE f.state = 'pending' AND s.team = ? AND (s.channel_type = 'public'"
                " OR (s.channel_type = 'im' AND s.channel = ?)"
                " OR (s.channel_type IN ('private', 'mpim') AND s.channel = ?))"
                " AND EXISTS (SELECT 1 FROM transcript_turns t"
                ' WHERE t.session_id = s.id AND t."user" = ?)'
                " ORDER BY f.due_at LIMIT ?",
                (team, dm_channel, shared_channel, user, limit),
            ).fetchall()
        return [Followup(*row) for row in rows]

    def mark_sent(self, session_id: str, now: float) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE followups SET state = 'sent', sent_at = ? WHERE session_id = ?",
                (now, session_id),
            )

    def drop(self, session_id: str) -> None:
        """Cancel one follow-up (its workspace uninstalled Thoth)."""
        with self._db.write() as conn:
            conn.execute("UPDATE followups SET state = 'cancelled' WHERE session_id = ?",
                         (session_id,))

    def cancel(self, *, channel: str, thread_ts: str) -> int:
        """Cancel the pending follow-ups of a thread; returns how many."""
        with self._db.write() as conn:
            return conn.execute(
                "UPDATE followups SET state = 'cancelled' WHERE state = 'pending'"
                " AND channel = ? AND thread_ts = ?",
                (channel, thread_ts),
            ).rowcount

    def count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM followups").fetchone()[0])
