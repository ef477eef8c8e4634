"""The MCP server's tables: each person's tokens for MCP over HTTP, and the clients and
one-time grants of signing in with Slack through OAuth (``oauth.py``)."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "mcp",
    (
        Migration(
            1,
            "mcp_tokens",
            portable="""
            -- A person's bearer tokens for `thoth serve`'s /mcp: only a hash is kept (the
            -- token is shown once, when made); revoked ones stay, for the audit's sake.
            CREATE TABLE mcp_tokens (
                id TEXT PRIMARY KEY,
                token_hash TEXT NOT NULL UNIQUE,
                team TEXT NOT NULL,
                "user" TEXT NOT NULL,
                label TEXT NOT NULL,
                made_by TEXT NOT NULL,
                made_at {real} NOT NULL,
                last_used_at {real},
                revoked_at {real},
                revoked_by TEXT
            );
            CREATE INDEX mcp_tokens_person ON mcp_tokens (team, "user");
            """,
        ),
        Migration(
            2,
            "mcp_oauth",
            portable="""
            -- A token made by signing in through OAuth lapses (expires_at) and is renewed
            -- by its refresh token, kept as a hash too; a person's own tokens have neither.
            ALTER TABLE mcp_tokens ADD COLUMN expires_at {real};
            ALTER TABLE mcp_tokens ADD COLUMN refresh_hash TEXT;
            ALTER TABLE mcp_tokens ADD COLUMN refresh_expires_at {real};
            ALTER TABLE mcp_tokens ADD COLUMN oauth_client TEXT;
            -- The refresh token the last renewal replaced: shown again, two hold it
            -- (a thief, or the client, renewed first), and the sign-in ends.
            ALTER TABLE mcp_tokens ADD COLUMN spent_refresh_hash TEXT;
            CREATE UNIQUE INDEX mcp_tokens_refresh ON mcp_tokens (refresh_hash);
            CREATE INDEX mcp_tokens_spent_refresh ON mcp_tokens (spent_refresh_hash);
            -- MCP clients registered themselves (RFC 7591): what they said they are.
            CREATE TABLE mcp_oauth_clients (
                client_id TEXT PRIMARY KEY,
                client TEXT NOT NULL,
                registered_at {real} NOT NULL
            );
            -- A sign-in on its way (waiting for Slack, for the person's consent) and the
            -- one-time codes it ends in: by a hash of what the browser carries, each used
            -- once and lapsing in minutes. In the database, not in memory: Slack's redirect
            -- and the client's token request may land on another replica.
            CREATE TABLE mcp_oauth_grants (
                grant_hash TEXT PRIMARY KEY,
                stage TEXT NOT NULL,
                payload TEXT NOT NULL,
                expires_at {real} NOT NULL
            );
            CREATE INDEX mcp_oauth_grants_lapse ON mcp_oauth_grants (expires_at);
            """,
        ),
    ),
)
