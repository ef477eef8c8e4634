"""What each person is looking at beside an assistant thread (``slack_thread_contexts``).

Slack sends it with ``assistant_thread_started`` and ``assistant_thread_context_changed``;
``assistant.py`` decides whether it may widen that person's recall.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from layers.storage.database import Database


@dataclass(frozen=True)
class ThreadContext:
    """Who opened an assistant thread, and the channel they are looking at (if any)."""

    user: str
    team: str | None
    channel: str | None


class ThreadContexts:
    def __init__(self, db: Database) -> None:
        self._db = db

    def keep(self, event: dict[str, Any]) -> None:
        """The context an assistant-thread event carries, replacing the thread's last one."""
        thread = event.get("assistant_thread") or {}
        context = thread.get("context") or {}
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO slack_thread_contexts (channel, thread_ts, "user", context_team,'
                " context_channel, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
                ' ON CONFLICT (channel, thread_ts) DO UPDATE SET "user" = excluded."user",'
                " context_team = excluded.context_team,"
                " context_channel = excluded.context_channel, updated_at = excluded.updated_at",
                (
                    str(thread.get("channel_id") or ""),
                    str(thread.get("thread_ts") or ""),
                    str(thread.get("user_id") or ""),
                    context.get("team_id"),
                    context.get("channel_id"),
                    time.time(),
                ),
            )

    def find(self, channel: str, thread_ts: str) -> ThreadContext | None:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT "user", context_team, context_channel FROM slack_thread_contexts'
                " WHERE channel = ? AND thread_ts = ?",
                (channel, thread_ts),
            ).fetchone()
        return None if row is None else ThreadContext(*row)
