"""The memory notes' table: one row per note, with its place, author, source and status."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "notes",
    (
        Migration(
            1,
            "memory_notes",
            """
            -- A note reaches a prompt only when kept, and only where its source could be
            -- read (the episodes' rule: team, channel, channel type, and the DM's person
            -- in "user"). Proposed notes wait for a founder; rejected and replaced ones
            -- stay as the record of what was decided.
            CREATE TABLE memory_notes (
                id TEXT PRIMARY KEY,
                text TEXT NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL
                    CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
                thread_ts TEXT,
                "user" TEXT,
                author_name TEXT,
                source TEXT NOT NULL,
                session_id TEXT,
                status TEXT NOT NULL DEFAULT 'proposed'
                    CHECK (status IN ('proposed', 'kept', 'rejected', 'replaced')),
                decided_by TEXT,
                decided_at REAL,
                replaced_by TEXT,
                record_line TEXT,
                created_at REAL NOT NULL
            );
            CREATE INDEX memory_notes_status ON memory_notes (status, team, created_at);
            """,
            postgres="""
            CREATE TABLE memory_notes (
                id TEXT PRIMARY KEY,
                text TEXT NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL
                    CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
                thread_ts TEXT,
                "user" TEXT,
                author_name TEXT,
                source TEXT NOT NULL,
                session_id TEXT,
                status TEXT NOT NULL DEFAULT 'proposed'
                    CHECK (status IN ('proposed', 'kept', 'rejected', 'replaced')),
                decided_by TEXT,
                decided_at DOUBLE PRECISION,
                replaced_by TEXT,
                record_line TEXT,
                created_at DOUBLE PRECISION NOT NULL
            );
            CREATE INDEX memory_notes_status ON memory_notes (status, team, created_at);
            """,
        ),
        Migration(
            2,
            "replaced_by_index",
            portable="""
            -- An edit's chain is walked back from the newest version (store.chain).
            CREATE INDEX memory_notes_replaced_by ON memory_notes (replaced_by);
            """,
        ),
    ),
)
