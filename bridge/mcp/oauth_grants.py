"""What signing in through OAuth keeps between its steps: the MCP clients that registered
themselves, and each sign-in's one-time grants (waiting for Slack, waiting for the
person's consent, the code the client exchanges), by a hash of what the browser or the
client carries.

A registered client's record is kept as the SDK hands it, its secret included: the SDK's
token endpoint compares that secret as issued. It only tells the same client again at
the token endpoint, where the one-time code and PKCE already bind a grant to the client
that asked for it; it opens no one's memory.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any, Literal

from mcp.shared.auth import OAuthClientInformationFull

from layers.shared.storage.database import Database

# Waiting for Slack's redirect back; for the person's Allow; the client's code; a code
# used (and which token it gave, revoked if the code is shown again).
Stage = Literal["slack", "consent", "code", "spent"]


class OAuthGrants:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def register(self, client: OAuthClientInformationFull) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO mcp_oauth_clients (client_id, client, registered_at)"
                " VALUES (?, ?, ?)",
                (client.client_id, client.model_dump_json(exclude_none=True), self._clock()))

    def client(self, client_id: str) -> OAuthClientInformationFull | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT client FROM mcp_oauth_clients WHERE client_id = ?",
                               (client_id,)).fetchone()
        return None if row is None else OAuthClientInformationFull.model_validate_json(
            str(row[0]))

    def put(self, stage: Stage, key: str, payload: dict[str, Any], *, ttl_s: float) -> None:
        now = self._clock()
        with self._db.write() as conn:
            # Lapsed grants go as new ones come: nothing else ever reads them.
            conn.execute("DELETE FROM mcp_oauth_grants WHERE expires_at <= ?", (now,))
            conn.execute(
                "INSERT INTO mcp_oauth_grants (grant_hash, stage, payload, expires_at)"
                " VALUES (?, ?, ?, ?)", (_hashed(key), stage, json.dumps(payload), now + ttl_s))

    def peek(self, stage: Stage, key: str) -> dict[str, Any] | None:
        """A live grant, left in place."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT payload FROM mcp_oauth_grants WHERE grant_hash = ? AND stage = ?"
                " AND expires_at > ?", (_hashed(key), stage, self._clock())).fetchone()
        return None if row is None else dict(json.loads(str(row[0])))

    def take(self, stage: Stage, key: str) -> dict[str, Any] | None:
        """A live grant, used up: of two requests carrying it, one has it (one statement
        finds and deletes it)."""
        with self._db.write() as conn:
            row = conn.execute(
                "DELETE FROM mcp_oauth_grants WHERE grant_hash = ? AND stage = ?"
                " AND expires_at > ? RETURNING payload",
                (_hashed(key), stage, self._clock())).fetchone()
        return None if row is None else dict(json.loads(str(row[0])))


def _hashed(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
