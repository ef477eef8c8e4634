"""The connections' tables: how Thoth is registered with each authorization server, the
sign-ins under way, and each person's tokens (sealed with SLACK_TOKEN_KEYS)."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "connections",
    (
        Migration(
            1,
            "connections",
            portable="""
            -- Thoth as a client of one authorization server, for one server of mcp.json:
            -- registered dynamically once (RFC 7591) and kept, so each person's sign-in
            -- does not register again. The secret, when the server gave one, is sealed.
            CREATE TABLE connection_clients (
                server TEXT NOT NULL,
                issuer TEXT NOT NULL,
                redirect_uri TEXT NOT NULL,
                client_id TEXT NOT NULL,
                client_secret_sealed TEXT,
                auth_method TEXT NOT NULL,
                registered_at {real} NOT NULL,
                PRIMARY KEY (server, issuer, redirect_uri)
            );
            -- A sign-in under way, found again by its state when the browser comes back:
            -- who began it, for which server, the PKCE verifier (sealed) and where the
            -- code is exchanged. Taken once.
            CREATE TABLE connection_starts (
                state TEXT PRIMARY KEY,
                team TEXT NOT NULL,
                "user" TEXT NOT NULL,
                server TEXT NOT NULL,
                ask_id TEXT,
                verifier_sealed TEXT NOT NULL,
                client_id TEXT NOT NULL,
                issuer TEXT NOT NULL,
                resource TEXT NOT NULL,
                token_endpoint TEXT NOT NULL,
                revocation_endpoint TEXT,
                redirect_uri TEXT NOT NULL,
                started_at {real} NOT NULL,
                expires_at {real} NOT NULL
            );
            -- A person's own connection to one server: their tokens, sealed; never shown,
            -- never logged, sent only to that server's token endpoint and to the server.
            CREATE TABLE connections (
                team TEXT NOT NULL,
                "user" TEXT NOT NULL,
                server TEXT NOT NULL,
                issuer TEXT NOT NULL,
                resource TEXT NOT NULL,
                client_id TEXT NOT NULL,
                token_endpoint TEXT NOT NULL,
                revocation_endpoint TEXT,
                access_sealed TEXT NOT NULL,
                refresh_sealed TEXT,
                scope TEXT,
                expires_at {real},
                connected_at {real} NOT NULL,
                last_used_at {real},
                -- A replica renewing the token holds it until then: a rotating refresh
                -- token is spent once, by one of them.
                renewing_until {real},
                PRIMARY KEY (team, "user", server)
            );
            CREATE INDEX connections_by_server ON connections (server);
            """,
        ),
    ),
)
