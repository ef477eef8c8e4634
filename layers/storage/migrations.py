"""Named, ordered, forward-only schema migrations.

Each migration runs once, in its own transaction, and is recorded in
``schema_migrations``. Never edit a migration that has shipped: add a new one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "episodes",
        """
        CREATE TABLE episodes (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            user_text TEXT NOT NULL,
            summary TEXT NOT NULL,
            created_at REAL NOT NULL,
            team TEXT NOT NULL,
            channel TEXT NOT NULL,
            channel_type TEXT NOT NULL
                CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
            thread_ts TEXT,
            user TEXT,
            user_name TEXT,
            session_id TEXT,
            cost_usd REAL NOT NULL DEFAULT 0,
            feedback INTEGER NOT NULL DEFAULT 0 CHECK (feedback IN (-1, 0, 1)),
            reply_model TEXT,
            embedding_model TEXT NOT NULL
        );
        CREATE INDEX episodes_created_at ON episodes (created_at);
        CREATE INDEX episodes_session ON episodes (session_id);
        -- Recall looks up the turns around a hit in its thread.
        CREATE INDEX episodes_thread ON episodes (team, channel, thread_ts, created_at);

        -- External-content FTS5: the text lives once, in episodes; porter stemming
        -- lets "hiking" find "hiked".
        CREATE VIRTUAL TABLE episodes_fts USING fts5 (
            user_name, user_text, summary,
            content = 'episodes', content_rowid = 'rowid',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts (rowid, user_name, user_text, summary)
            VALUES (new.rowid, new.user_name, new.user_text, new.summary);
        END;
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, user_name, user_text, summary)
            VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary);
        END;
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF user_name, user_text, summary
        ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, user_name, user_text, summary)
            VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary);
            INSERT INTO episodes_fts (rowid, user_name, user_text, summary)
            VALUES (new.rowid, new.user_name, new.user_text, new.summary);
        END;

        -- One row per chunk: a long episode is embedded in overlapping windows so
        -- its later parts stay findable past the model's 256-token limit. Vectors
        -- are little-endian float16: cosine to about three decimals at half the size.
        -- (A rowid table: WITHOUT ROWID stores rows this wide poorly.)
        CREATE TABLE episode_vectors (
            episode_rowid INTEGER NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
            chunk INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (episode_rowid, chunk)
        );
        """,
    ),
    Migration(
        2,
        "sessions_transcript_usage",
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

        -- Every model call's tokens and price, for the daily cost cap.
        CREATE TABLE model_usage (
            rowid INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            session_id TEXT,
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            cost_usd REAL NOT NULL
        );
        CREATE INDEX model_usage_at ON model_usage (at);
        """,
    ),
    Migration(
        3,
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
    ),
    Migration(
        4,
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
        5,
        "slack_bridge",
        """
        -- Deliveries already handled: Slack retries an event (same event_id) and sends a
        -- mention twice (app_mention and message, different ids, same channel + ts).
        CREATE TABLE slack_seen (
            key TEXT PRIMARY KEY,
            seen_at REAL NOT NULL
        );
        CREATE INDEX slack_seen_at ON slack_seen (seen_at);

        -- The agent's replies in Slack and the turn each answered, for reactions.
        CREATE TABLE slack_replies (
            channel TEXT NOT NULL,
            ts TEXT NOT NULL,
            team TEXT NOT NULL,
            thread_ts TEXT,
            session_id TEXT NOT NULL,
            episode_id TEXT,
            asker TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (channel, ts)
        );
        CREATE INDEX slack_replies_thread ON slack_replies (channel, thread_ts);

        -- Skill-draft approval cards, so a click or a reaction on one finds its draft.
        CREATE TABLE slack_cards (
            channel TEXT NOT NULL,
            ts TEXT NOT NULL,
            draft_id TEXT NOT NULL,
            PRIMARY KEY (channel, ts)
        );

        -- What a reaction did, so removing it can undo exactly that.
        CREATE TABLE slack_reaction_effects (
            channel TEXT NOT NULL,
            ts TEXT NOT NULL,
            reaction TEXT NOT NULL,
            user TEXT NOT NULL,
            effect TEXT NOT NULL,
            PRIMARY KEY (channel, ts, reaction, user)
        );
        """,
    ),
    Migration(
        6,
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
    ),
    Migration(
        7,
        "slack_ai_app",
        """
        -- The thread a skill card sits in, so a refusal about it is said in that thread.
        ALTER TABLE slack_cards ADD COLUMN thread_ts TEXT;

        -- What Slack's AI-app pane says a person is looking at, per assistant thread.
        CREATE TABLE slack_thread_contexts (
            channel TEXT NOT NULL,
            thread_ts TEXT NOT NULL,
            user TEXT NOT NULL,
            context_team TEXT,
            context_channel TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (channel, thread_ts)
        );
        """,
    ),
    Migration(
        8,
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
)
