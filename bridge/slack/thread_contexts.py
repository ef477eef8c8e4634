"""What each person is looking at beside their conversation with the agent.

The older assistant pane says it per thread (``assistant_thread_started``,
``assistant_thread_context_changed``: ``slack_thread_contexts``); the agent view says it
per person (``app_context_changed``, and ``app_context`` on ``message.im`` and
``app_home_opened``: ``slack_app_contexts``). ``assistant.py`` decides whether it may widen
that person's recall.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from layers.shared.storage.database import Database


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

    def keep_app_context(self, team: str, user: str, context: Any) -> None:
        """The agent view's context for ``user``: the first channel among its entities
        (Slack orders them by relevance), or none (they look at nothing we can use)."""
        looked_at = viewed_channel(context)
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO slack_app_contexts (team, "user", context_team, context_channel,'
                " updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (team, \"user\") DO UPDATE"
                " SET context_team = excluded.context_team,"
                " context_channel = excluded.context_channel, updated_at = excluded.updated_at",
                (team, user, looked_at[0] if looked_at else None,
                 looked_at[1] if looked_at else None, time.time()),
            )

    def find_app_context(self, team: str, user: str) -> ThreadContext | None:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT context_team, context_channel FROM slack_app_contexts'
                ' WHERE team = ? AND "user" = ?',
                (team, user),
            ).fetchone()
        return None if row is None else ThreadContext(user, row[0], row[1])

    def find(self, channel: str, thread_ts: str) -> ThreadContext | None:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT "user", context_team, context_channel FROM slack_thread_contexts'
                " WHERE channel = ? AND thread_ts = ?",
                (channel, thread_ts),
            ).fetchone()
        return None if row is None else ThreadContext(*row)


def viewed_channel(context: Any) -> tuple[str | None, str] | None:
    """(team, channel) of the first channel in an agent-view context's entities: a
    channel id, or the channel of a message being looked at."""
    entities = context.get("entities") if isinstance(context, dict) else None
    for entity in entities if isinstance(entities, list) else []:
        if not isinstance(entity, dict):
            continue
        value = entity.get("value")
        if entity.get("type") == "slack#/types/channel_id" and isinstance(value, str):
            channel = value
        elif entity.get("type") == "slack#/types/message_context" and isinstance(value, dict):
            channel = str(value.get("channel_id") or "")
        else:
            continue
        if channel:
            team = entity.get("team_id")
            return (str(team) if team else None), channel
    return None


def app_context_of(event: dict[str, Any]) -> Any:
    """The agent view's context riding on an event (``app_context``; ``context`` on
    ``app_home_opened``), or None when Slack sent none."""
    for key in ("app_context", "context"):
        if isinstance(event.get(key), dict):
            return event[key]
    return None
