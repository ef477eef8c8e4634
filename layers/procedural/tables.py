"""The procedural layer's tables (L4): skill drafts awaiting a decision, the brain commit
each remote last received (how processes sharing it hear of a change), and the remotes
found not answering."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "procedural",
    (
        Migration(
            1,
            "skill_drafts",
            """
            -- Proposed skills wait here, outside the brain's committed tree, until a human
            -- approves (the files are written and committed) or rejects them, or they expire.
            CREATE TABLE skill_drafts (
                id TEXT PRIMARY KEY,
                slug TEXT NOT NULL,
                version TEXT NOT NULL,
                base_version TEXT,
                title TEXT NOT NULL,
                description TEXT NOT NULL,
                body TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                state TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'accepted', 'rejected', 'expired')),
                proposed_by TEXT,
                proposed_at REAL NOT NULL,
                session_id TEXT,
                decided_by TEXT,
                decided_at REAL,
                commit_sha TEXT
            );
            CREATE INDEX skill_drafts_state ON skill_drafts (state, proposed_at);
            """,
            postgres="""
            CREATE TABLE skill_drafts (
                id TEXT PRIMARY KEY,
                slug TEXT NOT NULL,
                version TEXT NOT NULL,
                base_version TEXT,
                title TEXT NOT NULL,
                description TEXT NOT NULL,
                body TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                state TEXT NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'accepted', 'rejected', 'expired')),
                proposed_by TEXT,
                proposed_at DOUBLE PRECISION NOT NULL,
                session_id TEXT,
                decided_by TEXT,
                decided_at DOUBLE PRECISION,
                commit_sha TEXT
            );
            CREATE INDEX skill_drafts_state ON skill_drafts (state, proposed_at);
            """,
        ),
        Migration(
            2,
            "brain_heads",
            """
            -- The commit a process last pushed to a brain remote, so the others sharing it
            -- pull it within seconds (brain_peers.py).
            CREATE TABLE brain_heads (
                remote TEXT PRIMARY KEY,
                sha TEXT NOT NULL,
                pushed_at REAL NOT NULL
            );
            """,
            postgres="""
            CREATE TABLE brain_heads (
                remote TEXT PRIMARY KEY,
                sha TEXT NOT NULL,
                pushed_at DOUBLE PRECISION NOT NULL
            );
            """,
        ),
        Migration(
            3,
            "skill_allowed_tools",
            portable="""
            -- The Agent Skills field allowed-tools of a proposed skill (space-delimited):
            -- the team's tools it pre-approves while in use, approved with the rest of it.
            ALTER TABLE skill_drafts ADD COLUMN allowed_tools TEXT NOT NULL DEFAULT '';
            """,
        ),
        Migration(
            4,
            "brain_remote_down",
            portable="""
            -- A brain remote a process found not answering (brain_remote.py): the others'
            -- writers skip it at once instead of each waiting out its timeout under the
            -- writers' lock. Deleted by the first process that finds it answering again.
            CREATE TABLE brain_remote_down (
                remote TEXT PRIMARY KEY,
                since {real} NOT NULL,
                why TEXT NOT NULL
            );
            """,
        ),
    ),
)
