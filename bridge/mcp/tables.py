"""The MCP server's table: each person's tokens for MCP over HTTP."""

from __future__ import annotations

from layers.storage.migrations import Migration, Schema

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
    ),
)
