"""What each person's reaction on a reply did, so removing it undoes exactly that.

One row per (message, reaction, person): the effect to undo — the memory note a 🧠
proposed, the fact a 👤 created, the verdict a ✅/❌ or a feedback click stands for. The
table is the Slack transport's (``bridge/slack_tables.py``).
"""

from __future__ import annotations

from layers.shared.storage.database import Database


class ReactionEffects:
    def __init__(self, db: Database) -> None:
        self._db = db

    def keep(self, channel: str, ts: str, reaction: str, user: str, effect: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO slack_reaction_effects (channel, ts, reaction, "user", effect)'
                ' VALUES (?, ?, ?, ?, ?) ON CONFLICT (channel, ts, reaction, "user")'
                " DO UPDATE SET effect = excluded.effect",
                (channel, ts, reaction, user, effect),
            )

    def pop(self, channel: str, ts: str, reaction: str, user: str) -> str | None:
        """The effect of this person's reaction, forgotten; None if it had none."""
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT effect FROM slack_reaction_effects WHERE channel = ? AND ts = ?"
                ' AND reaction = ? AND "user" = ?',
                (channel, ts, reaction, user),
            ).fetchone()
            conn.execute(
                "DELETE FROM slack_reaction_effects WHERE channel = ? AND ts = ?"
                ' AND reaction = ? AND "user" = ?',
                (channel, ts, reaction, user),
            )
        return None if row is None else str(row[0])

    def standing(
        self, channel: str, ts: str, reactions: tuple[str, ...], *, clicks: str
    ) -> set[str]:
        """Which of ``reactions`` stand on a message, with the effects of the ``clicks``
        rows (feedback buttons stand for a reaction)."""
        marks = ",".join("?" * len(reactions))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT reaction FROM slack_reaction_effects WHERE channel = ? AND ts = ?"
                f" AND reaction IN ({marks})"
                " UNION SELECT effect FROM slack_reaction_effects WHERE channel = ? AND ts = ?"
                " AND reaction = ?",
                (channel, ts, *reactions, channel, ts, clicks),
            ).fetchall()
        return {str(row[0]) for row in rows}

    def any_with(self, reaction: str, effect: str) -> bool:
        """Whether any message's ``reaction`` still stands for ``effect``."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM slack_reaction_effects WHERE reaction = ? AND effect = ? LIMIT 1",
                (reaction, effect),
            ).fetchone()
        return row is not None
