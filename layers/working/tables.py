"""The working layer's tables (L1): sessions and their transcripts."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "working",
    (
        Migration(
            1,
            "sessions_transcript",
            """
            -- L1 working memory. A session is one conversation: a Slack thread, a DM
            -- thread or one `thoth chat` run. Its key names it in the transport's terms;
            -- only one open session may hold a key, a new one starts once it has ended.
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                key TEXT NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL
                    CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
                thread_ts TEXT,
                started_at REAL NOT NULL,
                last_turn_at REAL NOT NULL,
                ended_at REAL
            );
            CREATE UNIQUE INDEX sessions_open_key ON sessions (key) WHERE ended_at IS NULL;

            -- One row per turn (message and reply together), redacted. A turn whose
            -- reply failed is kept (nothing the user typed is lost) but is not replayed
            -- to the model.
            CREATE TABLE transcript_turns (
                session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                user TEXT,
                user_name TEXT,
                user_text TEXT NOT NULL,
                reply_text TEXT NOT NULL,
                ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
                created_at REAL NOT NULL,
                PRIMARY KEY (session_id, seq)
            );
            """,
            postgres="""
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                key TEXT NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL
                    CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
                thread_ts TEXT,
                started_at DOUBLE PRECISION NOT NULL,
                last_turn_at DOUBLE PRECISION NOT NULL,
                ended_at DOUBLE PRECISION
            );
            CREATE UNIQUE INDEX sessions_open_key ON sessions (key) WHERE ended_at IS NULL;
            CREATE TABLE transcript_turns (
                session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
                seq INTEGER NOT NULL,
                "user" TEXT,
                user_name TEXT,
                user_text TEXT NOT NULL,
                reply_text TEXT NOT NULL,
                ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (session_id, seq)
            );
            """,
        ),
        Migration(
            2,
            "session_contexts",
            portable="""
            -- What the model saw at the session's last turn: its context blocks, redacted,
            -- as the turn assembled them (the console's "what the model sees"). One row a
            -- session, replaced at each turn; gone with the session.
            CREATE TABLE session_contexts (
                session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
                assembled_at {real} NOT NULL,
                blocks TEXT NOT NULL
            );
            """,
        ),
    ),
)
