"""Reflection's tables (L5): runs, their writes, and follow-ups."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "reflection",
    (
        Migration(
            1,
            "reflection",
            """
            -- L5: one reflection per session. A crashed or killed run is retried; the report
            -- is kept once made (a retry never asks the model again) and each writer of the
            -- fan-out records when it is done, so none is applied twice.
            CREATE TABLE reflections (
                session_id TEXT PRIMARY KEY,
                state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
                attempts INTEGER NOT NULL DEFAULT 0,
                queued_at REAL NOT NULL,
                started_at REAL,
                finished_at REAL,
                report TEXT,
                raw_output TEXT,
                error TEXT
            );
            CREATE INDEX reflections_state ON reflections (state);
            CREATE TABLE reflection_writes (
                session_id TEXT NOT NULL,
                writer TEXT NOT NULL,
                done_at REAL NOT NULL,
                detail TEXT,
                PRIMARY KEY (session_id, writer)
            );
            -- "Check back on this": posted in the session's thread at due_at.
            CREATE TABLE followups (
                session_id TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                thread_ts TEXT,
                text TEXT NOT NULL,
                due_at REAL NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'cancelled')),
                created_at REAL NOT NULL,
                sent_at REAL
            );
            CREATE INDEX followups_due ON followups (state, due_at);
            """,
            postgres="""
            CREATE TABLE reflections (
                session_id TEXT PRIMARY KEY,
                state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
                attempts INTEGER NOT NULL DEFAULT 0,
                queued_at DOUBLE PRECISION NOT NULL,
                started_at DOUBLE PRECISION,
                finished_at DOUBLE PRECISION,
                report TEXT,
                raw_output TEXT,
                error TEXT
            );
            CREATE INDEX reflections_state ON reflections (state);
            CREATE TABLE reflection_writes (
                session_id TEXT NOT NULL,
                writer TEXT NOT NULL,
                done_at DOUBLE PRECISION NOT NULL,
                detail TEXT,
                PRIMARY KEY (session_id, writer)
            );
            CREATE TABLE followups (
                session_id TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                thread_ts TEXT,
                text TEXT NOT NULL,
                due_at DOUBLE PRECISION NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'cancelled')),
                created_at DOUBLE PRECISION NOT NULL,
                sent_at DOUBLE PRECISION
            );
            CREATE INDEX followups_due ON followups (state, due_at);
            """,
        ),
        Migration(
            2,
            "reflection_queues",
            """
            -- Whether the run posts a closing summary (a `/done`), for whichever worker runs it.
            ALTER TABLE reflections ADD COLUMN summary INTEGER NOT NULL DEFAULT 0;
            -- A follow-up being posted, or waiting to retry, is held until then.
            ALTER TABLE followups ADD COLUMN claimed_until REAL;
            """,
            postgres="""
            ALTER TABLE reflections ADD COLUMN summary INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE followups ADD COLUMN claimed_until DOUBLE PRECISION;
            """,
        ),
    ),
)
