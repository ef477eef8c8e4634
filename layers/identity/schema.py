"""The identity layer's tables (L2): the local backend's observations, the ingest outbox."""

from __future__ import annotations

from layers.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "identity",
    (
        Migration(
            1,
            "identity_observations",
            """
            -- L2 local backend: what each person said about themselves, redacted. A newer
            -- observation in the same slot supersedes an older one, which is kept as
            -- history (superseded_by) and never returned.
            CREATE TABLE identity_observations (
                id TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                user TEXT NOT NULL,
                text TEXT NOT NULL,
                norm_hash TEXT NOT NULL,
                slot TEXT,
                vector BLOB NOT NULL,
                source TEXT NOT NULL,
                session_id TEXT,
                created_at REAL NOT NULL,
                last_seen_at REAL NOT NULL,
                superseded_by TEXT,
                superseded_at REAL
            );
            CREATE INDEX identity_observations_person
                ON identity_observations (team, user, superseded_by);
            """,
        ),
        Migration(
            2,
            "identity_outbox",
            """
            -- Turns waiting for the identity backend (redacted): they survive a restart.
            CREATE TABLE identity_outbox (
                id INTEGER PRIMARY KEY,
                team TEXT NOT NULL,
                user TEXT NOT NULL,
                user_name TEXT,
                session_id TEXT NOT NULL,
                user_text TEXT NOT NULL,
                reply_text TEXT NOT NULL,
                said_at REAL NOT NULL,
                queued_at REAL NOT NULL
            );
            """,
        ),
    ),
)
