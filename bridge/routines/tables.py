"""The routines' tables: each routine (what, when, where, whose), and each of its runs."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "routines",
    (
        Migration(
            1,
            "routines",
            portable="""
            -- A routine: an instruction run as a turn of its creator's, in the place it
            -- posts to, at the times of a cron schedule read in the creator's time zone.
            -- Claimed for a run by one process at a time (claimed_by until claimed_until).
            CREATE TABLE routines (
                id TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                creator TEXT NOT NULL,
                creator_name TEXT,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL,
                thread_ts TEXT,
                channel_name TEXT,
                instruction TEXT NOT NULL,
                cron TEXT NOT NULL,
                zone TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'active'
                    CHECK (state IN ('active', 'paused')),
                paused_why TEXT,
                created_at {real} NOT NULL,
                next_run_at {real},
                last_run_at {real},
                claimed_by TEXT,
                claimed_until {real},
                -- The card it was made from: a card makes one routine, however many
                -- clicks reach however many replicas.
                made_from TEXT UNIQUE
            );
            CREATE INDEX routines_due ON routines (state, next_run_at);
            CREATE INDEX routines_by_creator ON routines (team, creator);
            -- One row a run, made before it starts: a run is begun once (its routine and
            -- due time are unique), whichever process claimed it.
            CREATE TABLE routine_runs (
                routine_id TEXT NOT NULL,
                due_at {real} NOT NULL,
                started_at {real} NOT NULL,
                finished_at {real},
                outcome TEXT NOT NULL DEFAULT 'running'
                    CHECK (outcome IN ('running', 'posted', 'failed', 'missed')),
                detail TEXT,
                posted_ts TEXT,
                run_by TEXT,
                PRIMARY KEY (routine_id, due_at)
            );
            """,
        ),
    ),
)
