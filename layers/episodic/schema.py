"""The episodic layer's tables (L3): episodes, their full-text index and vectors."""

from __future__ import annotations

from layers.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "episodic",
    (
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
    ),
)
