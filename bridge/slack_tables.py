"""The Slack bridge's tables: deliveries seen, replies, skill cards, reactions, pane context."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "slack",
    (
        Migration(
            1,
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
            postgres="""
            CREATE TABLE slack_seen (key TEXT PRIMARY KEY, seen_at DOUBLE PRECISION NOT NULL);
            CREATE INDEX slack_seen_at ON slack_seen (seen_at);
            CREATE TABLE slack_replies (
                channel TEXT NOT NULL,
                ts TEXT NOT NULL,
                team TEXT NOT NULL,
                thread_ts TEXT,
                session_id TEXT NOT NULL,
                episode_id TEXT,
                asker TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (channel, ts)
            );
            CREATE INDEX slack_replies_thread ON slack_replies (channel, thread_ts);
            CREATE TABLE slack_cards (
                channel TEXT NOT NULL,
                ts TEXT NOT NULL,
                draft_id TEXT NOT NULL,
                PRIMARY KEY (channel, ts)
            );
            CREATE TABLE slack_reaction_effects (
                channel TEXT NOT NULL,
                ts TEXT NOT NULL,
                reaction TEXT NOT NULL,
                "user" TEXT NOT NULL,
                effect TEXT NOT NULL,
                PRIMARY KEY (channel, ts, reaction, "user")
            );
            """,
        ),
        Migration(
            2,
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
            postgres="""
            ALTER TABLE slack_cards ADD COLUMN thread_ts TEXT;
            CREATE TABLE slack_thread_contexts (
                channel TEXT NOT NULL,
                thread_ts TEXT NOT NULL,
                "user" TEXT NOT NULL,
                context_team TEXT,
                context_channel TEXT,
                updated_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (channel, thread_ts)
            );
            """,
        ),
        Migration(
            3,
            "slack_inbox",
            """
            -- Deliveries taken and not yet done, in the order they were taken: the turns of
            -- one thread (and the reactions on one message) run in this order, whichever
            -- replica took them. A row is leased by the process that runs it; a lease that
            -- runs out (a crashed process) lets another take the row. Text is redacted.
            CREATE TABLE slack_inbox (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                lane TEXT NOT NULL,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                received_at REAL NOT NULL,
                owner TEXT NOT NULL,
                lease_until REAL NOT NULL
            );
            CREATE INDEX slack_inbox_lane ON slack_inbox (lane, id);
            CREATE INDEX slack_inbox_lease ON slack_inbox (lease_until);
            """,
            postgres="""
            CREATE TABLE slack_inbox (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                lane TEXT NOT NULL,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                received_at DOUBLE PRECISION NOT NULL,
                owner TEXT NOT NULL,
                lease_until DOUBLE PRECISION NOT NULL
            );
            CREATE INDEX slack_inbox_lane ON slack_inbox (lane, id);
            CREATE INDEX slack_inbox_lease ON slack_inbox (lease_until);
            """,
        ),
        Migration(
            4,
            "slack_note_cards",
            """
            -- Which message is which memory note's approval card (founders react ✅ / ❌).
            CREATE TABLE slack_note_cards (
                channel TEXT NOT NULL,
                ts TEXT NOT NULL,
                note_id TEXT NOT NULL,
                PRIMARY KEY (channel, ts)
            );
            """,
            postgres="""
            CREATE TABLE slack_note_cards (
                channel TEXT NOT NULL,
                ts TEXT NOT NULL,
                note_id TEXT NOT NULL,
                PRIMARY KEY (channel, ts)
            );
            """,
        ),
        Migration(
            5,
            "slack_app_contexts",
            portable="""
            -- What Slack's agent view says each person is looking at (app_context_changed,
            -- and the app_context of message.im and app_home_opened): per person, since
            -- their conversation with the agent is one DM whatever thread they are in.
            CREATE TABLE slack_app_contexts (
                team TEXT NOT NULL,
                "user" TEXT NOT NULL,
                context_team TEXT,
                context_channel TEXT,
                updated_at {real} NOT NULL,
                PRIMARY KEY (team, "user")
            );
            """,
        ),
        Migration(
            6,
            "slack_installations",
            portable="""
            -- Each workspace Thoth is installed in through Slack's OAuth flow, or each
            -- Enterprise Grid org for an org-wide install (``installed_in``: the team id,
            -- or the enterprise id). Only the bot token, sealed
            -- (layers/shared/token_cipher.py).
            CREATE TABLE slack_installations (
                installed_in TEXT PRIMARY KEY,
                enterprise_id TEXT,
                team_id TEXT,
                is_enterprise_install INTEGER NOT NULL,
                app_id TEXT,
                bot_id TEXT,
                bot_user_id TEXT,
                bot_scopes TEXT NOT NULL,
                bot_token_sealed TEXT NOT NULL,
                installer_user_id TEXT,
                installed_at {real} NOT NULL
            );
            -- The workspaces of an Enterprise Grid org an org-wide install has answered
            -- for: work that starts outside a request (a follow-up, a delivery taken
            -- over) names only its workspace, and finds its org's install through this.
            CREATE TABLE slack_org_teams (
                team_id TEXT PRIMARY KEY,
                enterprise_id TEXT NOT NULL
            );
            -- An install on its way: the OAuth ``state`` handed to Slack, by its hash, used
            -- once and lapsing in minutes. In the database: Slack's redirect back may land
            -- on another replica.
            CREATE TABLE slack_oauth_states (
                state_hash TEXT PRIMARY KEY,
                expires_at {real} NOT NULL
            );
            """,
        ),
        Migration(
            7,
            "slack_cards_team",
            portable="""
            -- The workspace a draft's card was posted in, so that a decision made in the
            -- console updates it with that workspace's token (installed into many).
            ALTER TABLE slack_cards ADD COLUMN team TEXT;
            """,
        ),
    ),
)
