"""What signing in through OAuth keeps between its steps: the MCP clients that registered
themselves, and each sign-in's one-time grants (waiting for Slack, waiting for the
person's consent, the code the client exchanges), by a hash of what the browser or the
client carries.

A registered client's record is kept as the SDK hands it, but its secret only as a hash,
as every grant here: the SDK's token endpoint compares the secret ``get_client`` gives it
with the one presented, as issued, so ``client`` hands back the presented secret (set
aside by ``oauth_front.py``) when its hash is the one kept, and otherwise one nobody
holds. A record kept before (its secret as issued) is hashed the first time it is read.
Where no front sets the presented secrets aside (``presented`` None), secrets are kept
and handed back as issued, as before: hashing them there would refuse every client that
has one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from typing import Any, Literal

from mcp.shared.auth import OAuthClientInformationFull

from layers.shared.storage.database import Database

# How a kept secret's hash is told from a secret kept as issued (one of 64 hex digits).
HASHED = "sha256:"

# Waiting for Slack's redirect back; for the person's Allow; the client's code; a code
# used (and which token it gave, revoked if the code is shown again).
Stage = Literal["slack", "consent", "code", "spent"]


class OAuthGrants:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def register(self, client: OAuthClientInformationFull, *, hashed: bool = True) -> None:
        record = _kept(client) if hashed else client.model_dump_json(exclude_none=True)
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO mcp_oauth_clients (client_id, client, registered_at)"
                " VALUES (?, ?, ?)", (client.client_id, record, self._clock()))

    def client(self, client_id: str, presented: frozenset[str] | None = frozenset(),
               ) -> OAuthClientInformationFull | None:
        """A registered client, its secret the one of ``presented`` whose hash is kept,
        else one nobody holds (so the SDK's comparison fails); None if unknown.
        ``presented`` None: no front set them aside, a secret kept as issued is handed
        back as it is."""
        with self._db.read() as conn:
            row = conn.execute("SELECT client FROM mcp_oauth_clients WHERE client_id = ?",
                               (client_id,)).fetchone()
        if row is None:
            return None
        client = OAuthClientInformationFull.model_validate_json(str(row[0]))
        kept = client.client_secret
        if kept is None:
            return client  # a public client: nothing to compare
        if not kept.startswith(HASHED):
            if presented is None:
                return client
            self._hash_kept_secret(client)
            kept = HASHED + _hashed(kept)
        matching = [secret for secret in sorted(presented or ())
                    if hmac.compare_digest(HASHED + _hashed(secret), kept)]
        return client.model_copy(update={
            "client_secret": matching[0] if matching else secrets.token_urlsafe(32)})

    def _hash_kept_secret(self, client: OAuthClientInformationFull) -> None:
        """A record kept as issued (before secrets were hashed), kept as a hash from now."""
        with self._db.write() as conn:
            conn.execute("UPDATE mcp_oauth_clients SET client = ? WHERE client_id = ?",
                         (_kept(client), client.client_id))

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


def _kept(client: OAuthClientInformationFull) -> str:
    """The record as stored: its secret (256 random bits, so one SHA-256 round is enough)
    as a hash."""
    secret = client.client_secret
    if secret is not None and not secret.startswith(HASHED):
        client = client.model_copy(update={"client_secret": HASHED + _hashed(secret)})
    return client.model_dump_json(exclude_none=True)


def _hashed(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
