"""The team tools' tables: who always allows which tool, and the calls waiting for a
person's yes (``bridge/pipeline/tools/approvals.py``)."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "team_tools",
    (
        Migration(
            1,
            "tool_approvals",
            portable="""
            -- "Always allow": this person lets this tool of this server run in their turns
            -- without being asked again, until they (or a founder) revoke it.
            CREATE TABLE tool_grants (
                team TEXT NOT NULL,
                "user" TEXT NOT NULL,
                server TEXT NOT NULL,
                tool TEXT NOT NULL,
                granted_at {real} NOT NULL,
                PRIMARY KEY (team, "user", server, tool)
            );
            -- A call waiting for the person whose turn asked for it: its exact arguments
            -- (a call whose arguments hold a secret is never asked, so none is kept), where
            -- to answer, and its card. Taken once: waiting -> allowed | denied | expired.
            CREATE TABLE tool_asks (
                id TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                channel TEXT NOT NULL,
                channel_type TEXT NOT NULL,
                thread_ts TEXT,
                session_key TEXT NOT NULL,
                asker TEXT NOT NULL,
                asker_name TEXT,
                server TEXT NOT NULL,
                tool TEXT NOT NULL,
                arguments TEXT NOT NULL,
                asked_at {real} NOT NULL,
                expires_at {real} NOT NULL,
                card_ts TEXT,
                state TEXT NOT NULL DEFAULT 'waiting'
                    CHECK (state IN ('waiting', 'allowed', 'denied', 'expired')),
                decided_by TEXT,
                decided_at {real}
            );
            CREATE INDEX tool_asks_waiting ON tool_asks (state, expires_at);
            """,
        ),
        Migration(
            2,
            "connect_asks",
            portable="""
            -- An ask to connect a person's own account (tool '(connect)') is answered in
            -- the console, not on a card: whichever Slack process takes it first goes on
            -- with the conversation, once (bridge/slack/connect_links.py).
            ALTER TABLE tool_asks ADD COLUMN continued_at {real};
            """,
        ),
    ),
)
