"""Which Slack message is which reply: what a reaction on it refers to."""

from __future__ import annotations

import time
from dataclasses import dataclass

from layers.shared.storage.database import Database


@dataclass(frozen=True)
class ReplyRecord:
    channel: str
    ts: str
    team: str
    thread_ts: str | None
    session_id: str
    episode_id: str | None
    asker: str | None


class SlackReplies:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record(self, reply: ReplyRecord) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO slack_replies (channel, ts, team, thread_ts, session_id,"
                " episode_id, asker, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (channel, ts) DO UPDATE SET team = excluded.team,"
                " thread_ts = excluded.thread_ts, session_id = excluded.session_id,"
                " episode_id = excluded.episode_id, asker = excluded.asker,"
                " created_at = excluded.created_at",
                (
                    reply.channel,
                    reply.ts,
                    reply.team,
                    reply.thread_ts,
                    reply.session_id,
                    reply.episode_id,
                    reply.asker,
                    time.time(),
                ),
            )

    def set_episode(self, channel: str, ts: str, episode_id: str | None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE slack_replies SET episode_id = ? WHERE channel = ? AND ts = ?",
                (episode_id, channel, ts),
            )

    def find(self, channel: str, ts: str) -> ReplyRecord | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT channel, ts, team, thread_ts, session_id, episode_id, asker"
                " FROM slack_replies WHERE channel = ? AND ts = ?",
                (channel, ts),
            ).fetchone()
        return None if row is None else ReplyRecord(*row)

    def in_thread(self, channel: str, thread_ts: str) -> bool:
        """Whether the agent has replied in this thread (so it follows the thread)."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM slack_replies WHERE channel = ? AND thread_ts = ? LIMIT 1",
                (channel, thread_ts),
            ).fetchone()
        return row is not None

    def posted_after(self, channel: str, thread_ts: str, ts: str) -> list[str]:
        """The agent's messages in this thread since the message at ``ts``."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT ts FROM slack_replies WHERE channel = ? AND thread_ts = ?",
                (channel, thread_ts),
            ).fetchall()
        # Slack's ts are decimal strings ("1700000000.000100"): compared as numbers.
        return [str(row[0]) for row in rows if float(row[0]) > float(ts)]
