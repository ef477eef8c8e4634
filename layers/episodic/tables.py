"""The episodic layer's tables (L3): episodes, their full-text index and vectors."""

from __future__ import annotations

from layers.episodic.fts5_words import FTS5_WORDS_POSTGRES
from layers.shared.storage.migrations import Migration, Schema

# Recall walks a thread from a hit to the turns on either side, one index seek each
# way (store.thread_neighbours). No thread (NULL) is keyed as '' so that one equality
# serves both, and rowid breaks ties in the same order the walk sorts by.
# (Made before the old one is dropped: on PostgreSQL a dropped index locks out reads
# until the migration commits, a new one only writes.)
THREAD_WALK = """
    CREATE INDEX episodes_thread_walk
        ON episodes (team, channel, coalesce(thread_ts, ''), created_at, rowid);
    DROP INDEX episodes_thread;
"""

# The words of the turn before (migration 6): FTS5 cannot add a column, so its index is
# made again, with one more, and filled from the rows.
_FTS_COLUMNS = "user_name, user_text, summary, turn_before"
TURN_BEFORE_SQLITE = f"""
    ALTER TABLE episodes ADD COLUMN turn_before TEXT NOT NULL DEFAULT '';
    ALTER TABLE episodes ADD COLUMN turn_before_rowid INTEGER;
    CREATE INDEX episodes_turn_before ON episodes (turn_before_rowid)
        WHERE turn_before_rowid IS NOT NULL;

    DROP TRIGGER episodes_fts_insert;
    DROP TRIGGER episodes_fts_delete;
    DROP TRIGGER episodes_fts_update;
    DROP TABLE episodes_fts;
    CREATE VIRTUAL TABLE episodes_fts USING fts5 (
        {_FTS_COLUMNS},
        content = 'episodes', content_rowid = 'rowid',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
        INSERT INTO episodes_fts (rowid, {_FTS_COLUMNS})
        VALUES (new.rowid, new.user_name, new.user_text, new.summary, new.turn_before);
    END;
    CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
        INSERT INTO episodes_fts (episodes_fts, rowid, {_FTS_COLUMNS})
        VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary,
                old.turn_before);
    END;
    CREATE TRIGGER episodes_fts_update AFTER UPDATE OF {_FTS_COLUMNS} ON episodes BEGIN
        INSERT INTO episodes_fts (episodes_fts, rowid, {_FTS_COLUMNS})
        VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary,
                old.turn_before);
        INSERT INTO episodes_fts (rowid, {_FTS_COLUMNS})
        VALUES (new.rowid, new.user_name, new.user_text, new.summary, new.turn_before);
    END;
    INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild');

    -- A forgotten turn's words leave the turn that borrowed them.
    CREATE TRIGGER episodes_turn_before_forgotten AFTER DELETE ON episodes BEGIN
        UPDATE episodes SET turn_before = '', turn_before_rowid = NULL
        WHERE turn_before_rowid = old.rowid;
    END;
    -- The borrowed words stay a copy of the turn's own.
    CREATE TRIGGER episodes_turn_before_edited AFTER UPDATE OF user_text ON episodes BEGIN
        UPDATE episodes SET turn_before = new.user_text WHERE turn_before_rowid = new.rowid;
    END;
    {{backfills}}
"""
TURN_BEFORE_POSTGRES = """
    ALTER TABLE episodes ADD COLUMN turn_before TEXT NOT NULL DEFAULT '';
    ALTER TABLE episodes ADD COLUMN turn_before_rowid BIGINT;
    CREATE INDEX episodes_turn_before ON episodes (turn_before_rowid)
        WHERE turn_before_rowid IS NOT NULL;

    -- The episode's own words weigh A, the turn before's D: ts_rank's weights then set
    -- how much the borrowed words count (pg_search.py). Remade, with its GIN index;
    -- the word counts are counted again from it.
    ALTER TABLE episodes DROP COLUMN search;
    ALTER TABLE episodes ADD COLUMN search TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english',
            coalesce(user_name, '') || ' ' || user_text || ' ' || summary), 'A')
        || setweight(to_tsvector('english', turn_before), 'D')) STORED;
    CREATE INDEX episodes_search ON episodes USING gin (search);
    DELETE FROM episode_words;
    INSERT INTO episode_words (lexeme, episodes)
        SELECT lexeme, count(*) FROM episodes, unnest(tsvector_to_array(search)) AS lexeme
        GROUP BY lexeme;

    -- A forgotten turn's words leave the turn that borrowed them.
    CREATE FUNCTION thoth_forget_turn_before() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE episodes SET turn_before = '', turn_before_rowid = NULL
        WHERE turn_before_rowid IN (SELECT rowid FROM removed);
        RETURN NULL;
    END $$;
    CREATE TRIGGER episodes_turn_before_forgotten AFTER DELETE ON episodes
        REFERENCING OLD TABLE AS removed
        FOR EACH STATEMENT EXECUTE FUNCTION thoth_forget_turn_before();
    -- The borrowed words stay a copy of the turn's own.
    CREATE FUNCTION thoth_follow_turn_before() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE episodes SET turn_before = new.user_text WHERE turn_before_rowid = new.rowid;
        RETURN NULL;
    END $$;
    CREATE TRIGGER episodes_turn_before_edited AFTER UPDATE OF user_text ON episodes
        FOR EACH ROW WHEN (old.user_text IS DISTINCT FROM new.user_text)
        EXECUTE FUNCTION thoth_follow_turn_before();
    {backfills}
"""
# Files shared with a turn (migration 9, issue 50): each file's name, kind, size, link
# and extract in a table of their own, gone with the episode; their extracts joined in
# the episode's ``files_text``, searched as its own words (a fifth FTS5 column, so the
# index is made again as in migration 6; on PostgreSQL weight B, weighed as A).
EPISODE_FILES_TABLE = """
    CREATE TABLE episode_files (
        episode_rowid BIGINT NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        size BIGINT NOT NULL DEFAULT 0,
        mimetype TEXT,
        permalink TEXT,
        extract TEXT NOT NULL DEFAULT '',
        unread TEXT,
        PRIMARY KEY (episode_rowid, position)
    );
"""
_FILES_FTS_COLUMNS = "user_name, user_text, summary, turn_before, files_text"
FILES_SQLITE = f"""
    ALTER TABLE episodes ADD COLUMN files_text TEXT NOT NULL DEFAULT '';
    {EPISODE_FILES_TABLE}
    DROP TRIGGER episodes_fts_insert;
    DROP TRIGGER episodes_fts_delete;
    DROP TRIGGER episodes_fts_update;
    DROP TABLE episodes_fts;
    CREATE VIRTUAL TABLE episodes_fts USING fts5 (
        {_FILES_FTS_COLUMNS},
        content = 'episodes', content_rowid = 'rowid',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
        INSERT INTO episodes_fts (rowid, {_FILES_FTS_COLUMNS})
        VALUES (new.rowid, new.user_name, new.user_text, new.summary, new.turn_before,
                new.files_text);
    END;
    CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
        INSERT INTO episodes_fts (episodes_fts, rowid, {_FILES_FTS_COLUMNS})
        VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary,
                old.turn_before, old.files_text);
    END;
    CREATE TRIGGER episodes_fts_update AFTER UPDATE OF {_FILES_FTS_COLUMNS} ON episodes
    BEGIN
        INSERT INTO episodes_fts (episodes_fts, rowid, {_FILES_FTS_COLUMNS})
        VALUES ('delete', old.rowid, old.user_name, old.user_text, old.summary,
                old.turn_before, old.files_text);
        INSERT INTO episodes_fts (rowid, {_FILES_FTS_COLUMNS})
        VALUES (new.rowid, new.user_name, new.user_text, new.summary, new.turn_before,
                new.files_text);
    END;
    INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild');
"""
FILES_POSTGRES = f"""
    ALTER TABLE episodes ADD COLUMN files_text TEXT NOT NULL DEFAULT '';
    {EPISODE_FILES_TABLE}
    ALTER TABLE episodes DROP COLUMN search;
    ALTER TABLE episodes ADD COLUMN search TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english',
            coalesce(user_name, '') || ' ' || user_text || ' ' || summary), 'A')
        || setweight(to_tsvector('english', files_text), 'B')
        || setweight(to_tsvector('english', turn_before), 'D')) STORED;
    CREATE INDEX episodes_search ON episodes USING gin (search);
    DELETE FROM episode_words;
    INSERT INTO episode_words (lexeme, episodes)
        SELECT lexeme, count(*) FROM episodes, unnest(tsvector_to_array(search)) AS lexeme
        GROUP BY lexeme;
"""

# What `thoth episodes backfill` (backfill.py) still owes the episodes stored before
# migration 6: each task's next rowid and the last one it must reach. Episodes stored
# since are written whole.
BACKFILLS = """
    CREATE TABLE episode_backfills (
        task TEXT PRIMARY KEY,
        next_rowid BIGINT NOT NULL,
        last_rowid BIGINT NOT NULL
    );
    -- (None when there are no episodes: a new store holds no row of Thoth's data.)
    -- (HAVING without GROUP BY needs SQLite 3.39: a subquery instead.)
    INSERT INTO episode_backfills (task, next_rowid, last_rowid)
        SELECT 'turn_before', 1, newest FROM (SELECT max(rowid) AS newest FROM episodes) AS m
        WHERE newest IS NOT NULL;
    INSERT INTO episode_backfills (task, next_rowid, last_rowid)
        SELECT 'sentence_units', 1, newest FROM (SELECT max(rowid) AS newest FROM episodes) AS m
        WHERE newest IS NOT NULL;
"""

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
            postgres="""
            CREATE TABLE episodes (
                rowid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                user_text TEXT NOT NULL,
                summary TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL
                    CHECK (channel_type IN ('im', 'public', 'private', 'mpim')),
                thread_ts TEXT,
                "user" TEXT,
                user_name TEXT,
                session_id TEXT,
                cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
                feedback INTEGER NOT NULL DEFAULT 0 CHECK (feedback IN (-1, 0, 1)),
                reply_model TEXT,
                embedding_model TEXT NOT NULL,
                -- The words, stemmed as FTS5's porter tokenizer stems them (pg_search.py).
                search TSVECTOR GENERATED ALWAYS AS (to_tsvector('english',
                    coalesce(user_name, '') || ' ' || user_text || ' ' || summary)) STORED
            );
            CREATE INDEX episodes_created_at ON episodes (created_at);
            CREATE INDEX episodes_session ON episodes (session_id);
            CREATE INDEX episodes_thread ON episodes (team, channel, thread_ts, created_at);
            CREATE INDEX episodes_search ON episodes USING gin (search);
            -- Float16 bytes, as on SQLite: the in-process index searches them (pg_search.py
            -- says why pgvector is not used yet).
            CREATE TABLE episode_vectors (
                rowid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                episode_rowid BIGINT NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
                chunk INTEGER NOT NULL,
                vector BYTEA NOT NULL,
                UNIQUE (episode_rowid, chunk)
            );
            """,
        ),
        Migration(
            2,
            "pgvector_hnsw",
            """
            -- SQLite searches its vectors in process (vector_index.py): nothing to add.
            """,
            postgres="""
            -- Meaning searched inside PostgreSQL: pgvector's HNSW over cosine distance.
            CREATE EXTENSION IF NOT EXISTS vector;
            -- The stored float16 bytes (little-endian) as pgvector's vector: exact, since
            -- every half-precision number is a real. IMMUTABLE, so a column can be made
            -- of it: the bytes stay the one stored form (the same on both engines, what
            -- `thoth migrate` copies and checks) and the vector always follows them.
            -- (float8 arithmetic throughout: NUMERIC powers made it three times slower.)
            CREATE FUNCTION thoth_half_to_vector(bytes bytea) RETURNS vector
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
                SELECT array_agg(
                    CASE WHEN exponent = 0 THEN mantissa * 5.9604644775390625e-08::float8
                        ELSE (1024 + mantissa) * pow(2::float8, exponent - 25) END
                    * CASE WHEN hi >= 128 THEN -1::float8 ELSE 1::float8 END
                    ORDER BY i)::real[]::vector
                FROM (SELECT i, hi, (hi >> 2) & 31 AS exponent, (hi & 3) * 256 + lo AS mantissa
                      FROM (SELECT i, get_byte(bytes, 2 * i) AS lo,
                                   get_byte(bytes, 2 * i + 1) AS hi
                            FROM generate_series(0, length(bytes) / 2 - 1) AS i) AS bytes_
                     ) AS halves
            $$;
            ALTER TABLE episode_vectors ADD COLUMN embedding vector(384)
                GENERATED ALWAYS AS (thoth_half_to_vector(vector)) STORED;
            CREATE INDEX episode_vectors_embedding ON episode_vectors
                USING hnsw (embedding vector_cosine_ops);
            """,
        ),
        Migration(
            3,
            "thread_walk_index",
            THREAD_WALK,
            postgres=THREAD_WALK,
        ),
        Migration(
            4,
            "word_counts",
            """
            -- FTS5 counts a word's episodes quickly enough (store.py caches them too).
            """,
            postgres="""
            -- How many episodes hold each stemmed word, kept by triggers: recall weighs
            -- and picks its words by these counts (lexical.py), and counting a word
            -- through the GIN index reads its whole posting list, tens of ms for a
            -- common word at a million episodes (seconds when cold).
            CREATE TABLE episode_words (
                lexeme TEXT PRIMARY KEY,
                episodes BIGINT NOT NULL
            );
            INSERT INTO episode_words (lexeme, episodes)
                SELECT lexeme, count(*) FROM episodes, unnest(tsvector_to_array(search)) AS lexeme
                GROUP BY lexeme;

            -- Statement triggers over transition tables: a statement that writes many
            -- episodes (COPY, `thoth migrate`'s many-row INSERTs) updates each word once.
            -- Every episode write holds the one-writer lock, so no two update these rows
            -- at once. A word no episode holds any more is deleted.
            CREATE FUNCTION thoth_count_words_added() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO episode_words (lexeme, episodes)
                    SELECT lexeme, count(*) FROM added,
                        unnest(tsvector_to_array(added.search)) AS lexeme
                    GROUP BY lexeme
                ON CONFLICT (lexeme) DO UPDATE
                    SET episodes = episode_words.episodes + excluded.episodes;
                RETURN NULL;
            END $$;
            CREATE FUNCTION thoth_count_words_removed() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE episode_words SET episodes = episode_words.episodes - gone.episodes
                FROM (SELECT lexeme, count(*) AS episodes FROM removed,
                          unnest(tsvector_to_array(removed.search)) AS lexeme
                      GROUP BY lexeme) AS gone
                WHERE episode_words.lexeme = gone.lexeme;
                DELETE FROM episode_words WHERE episodes <= 0 AND lexeme IN (
                    SELECT unnest(tsvector_to_array(search)) FROM removed);
                RETURN NULL;
            END $$;
            -- An edit of the text: each word of the new rows counted, each of the old
            -- uncounted (feedback and the like leave every word's sum at zero).
            CREATE FUNCTION thoth_count_words_changed() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO episode_words (lexeme, episodes)
                    SELECT lexeme, sum(delta) FROM (
                        SELECT unnest(tsvector_to_array(search)) AS lexeme, 1 AS delta
                        FROM added
                        UNION ALL
                        SELECT unnest(tsvector_to_array(search)), -1 FROM removed
                    ) AS each_word GROUP BY lexeme HAVING sum(delta) <> 0
                ON CONFLICT (lexeme) DO UPDATE
                    SET episodes = episode_words.episodes + excluded.episodes;
                DELETE FROM episode_words WHERE episodes <= 0 AND lexeme IN (
                    SELECT unnest(tsvector_to_array(search)) FROM removed);
                RETURN NULL;
            END $$;
            CREATE FUNCTION thoth_count_words_emptied() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM episode_words;
                RETURN NULL;
            END $$;
            CREATE TRIGGER episode_words_insert AFTER INSERT ON episodes
                REFERENCING NEW TABLE AS added
                FOR EACH STATEMENT EXECUTE FUNCTION thoth_count_words_added();
            CREATE TRIGGER episode_words_delete AFTER DELETE ON episodes
                REFERENCING OLD TABLE AS removed
                FOR EACH STATEMENT EXECUTE FUNCTION thoth_count_words_removed();
            CREATE TRIGGER episode_words_update AFTER UPDATE ON episodes
                REFERENCING OLD TABLE AS removed NEW TABLE AS added
                FOR EACH STATEMENT EXECUTE FUNCTION thoth_count_words_changed();
            -- `thoth migrate --replace` empties episodes with TRUNCATE, which fires no
            -- DELETE trigger.
            CREATE TRIGGER episode_words_truncate AFTER TRUNCATE ON episodes
                FOR EACH STATEMENT EXECUTE FUNCTION thoth_count_words_emptied();
            """,
        ),
        Migration(
            5,
            "episode_recalls",
            portable="""
            -- Which turns recalled an episode (layers/episodic/recall_uses.py): where and
            -- when, in which session. Gone with the episode.
            CREATE TABLE episode_recalls (
                episode_rowid BIGINT NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
                recalled_at {real} NOT NULL,
                session_id TEXT NOT NULL,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL,
                "user" TEXT
            );
            CREATE INDEX episode_recalls_episode ON episode_recalls (episode_rowid, recalled_at);
            """,
        ),
        Migration(
            6,
            "turn_before",
            TURN_BEFORE_SQLITE.format(backfills=BACKFILLS),
            postgres=TURN_BEFORE_POSTGRES.format(backfills=BACKFILLS),
        ),
        Migration(
            7,
            "episode_states",
            portable="""
            -- A memory paused (recall and prompts pass it by, until resumed) or archived
            -- (passed by, and kept aside), by whom and when (layers/episodic/states.py).
            -- A live episode has no row. Gone with the episode.
            CREATE TABLE episode_states (
                episode_rowid BIGINT PRIMARY KEY
                    REFERENCES episodes (rowid) ON DELETE CASCADE,
                state TEXT NOT NULL CHECK (state IN ('paused', 'archived')),
                set_by TEXT NOT NULL,
                set_at {real} NOT NULL
            );
            -- Which way in recalled it: a turn, an MCP client's recall, the console.
            ALTER TABLE episode_recalls ADD COLUMN via TEXT NOT NULL DEFAULT 'turn';
            """,
        ),
        Migration(
            8,
            "workspace_newest",
            portable="""
            -- A member's newest first (the console's browse, and what they said on their
            -- page) walks their workspace by time, not the whole workspace sorted: 160 ms
            -- to 0.1 ms at 100k (bench/console_pages.py). Their DMs, and what they said
            -- with others, are counted by person ("forget me"), not by scanning.
            CREATE INDEX episodes_team_newest ON episodes (team, created_at, id);
            CREATE INDEX episodes_team_user ON episodes (team, "user", created_at, id);
            """,
        ),
        Migration(
            9,
            "episode_files",
            FILES_SQLITE,
            postgres=FILES_POSTGRES,
        ),
        Migration(
            10,
            "episode_names",
            portable="""
            -- The names people are called by in a turn (layers/episodic/called_names.py):
            -- "I'm Kate" names its speaker, "Hey Kate!" the last other person who spoke in
            -- the thread. ``called`` is that person's display name, read from their turn
            -- ``called_rowid`` (the turn itself for "I'm Kate"). Forgotten with either
            -- turn; counted by place when a question names someone.
            CREATE TABLE episode_names (
                episode_rowid BIGINT NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                name TEXT NOT NULL,
                called TEXT NOT NULL,
                called_rowid BIGINT NOT NULL REFERENCES episodes (rowid) ON DELETE CASCADE,
                PRIMARY KEY (episode_rowid, name)
            );
            CREATE INDEX episode_names_called ON episode_names (called_rowid);
            CREATE INDEX episode_names_place ON episode_names (team, channel, name);
            -- The episodes stored before have theirs read by `thoth episodes backfill`.
            INSERT INTO episode_backfills (task, next_rowid, last_rowid)
                SELECT 'names_called', 1, newest
                FROM (SELECT max(rowid) AS newest FROM episodes) AS m
                WHERE newest IS NOT NULL;
            """,
        ),
        Migration(
            11,
            "fts5_words",
            """
            -- FTS5 scores its own words: nothing to change. PostgreSQL's are made as FTS5
            -- makes them (fts5_words.py), for pg_search.py's BM25.
            """,
            postgres=FTS5_WORDS_POSTGRES,
        ),
    ),
)
