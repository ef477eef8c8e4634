"""The turns queued while the model's API was overloaded (``answer_later.py``)."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "answer_later",
    (
        Migration(
            1,
            "answer_later",
            portable="""
            -- A turn told "Claude is overloaded; I will answer when it is back", to be
            -- answered once from here. One row per delivery (event_key), taken by one
            -- process at a time (held_until), in each conversation's order (session_key).
            CREATE TABLE answer_later (
                id {serial},
                event_key TEXT NOT NULL UNIQUE,
                session_key TEXT NOT NULL,
                -- Whose and where: "forget me" and a workspace's purge delete their rows.
                team TEXT NOT NULL DEFAULT '',
                "user" TEXT NOT NULL DEFAULT '',
                turn TEXT NOT NULL,
                queued_at {real} NOT NULL,
                not_before {real} NOT NULL,
                held_until {real},
                owner TEXT,
                tries INTEGER NOT NULL DEFAULT 0
            );
            CREATE INDEX answer_later_session ON answer_later (session_key, id);
            CREATE INDEX answer_later_person ON answer_later (team, "user");
            """,
        ),
    ),
)
