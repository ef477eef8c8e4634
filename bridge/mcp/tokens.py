"""Each person's tokens for MCP over HTTP: made for one Slack user, shown once, kept as a
hash, revocable.

A token is 32 random bytes (``secrets``), so a plain SHA-256 is the right hash: a slow
password hash protects guessable secrets, and nothing here is guessable. The prefix
``thoth_mcp_`` lets a person (and the redaction rules) tell one on sight.

Making and revoking a token is written to the audit log here, whoever asks (the
command line, ``/thoth``, the console): a token is access to someone's memory.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from layers.audit.log import AuditLog
from layers.errors import BadInput
from layers.storage.database import Database

TOKEN_PREFIX = "thoth_mcp_"
MAX_LABEL_CHARS = 80
# A token's last use is written at most this often: every request would be a write.
LAST_USED_EVERY_S = 60.0


@dataclass(frozen=True)
class McpToken:
    id: str
    team: str
    user: str
    label: str
    made_by: str
    made_at: float
    last_used_at: float | None
    revoked_at: float | None
    revoked_by: str | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


_COLUMNS = 'id, team, "user", label, made_by, made_at, last_used_at, revoked_at, revoked_by'


class McpTokens:
    def __init__(self, db: Database, audit: AuditLog, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._audit = audit
        self._clock = clock

    def make(self, team: str, user: str, *, label: str, made_by: str,
             origin: str) -> tuple[McpToken, str]:
        """A new token for ``user`` of ``team``: the record, and the token itself (shown
        once: only its hash is kept). ``made_by`` and ``origin`` as the audit names them."""
        label = " ".join(label.split())
        if not label or len(label) > MAX_LABEL_CHARS:
            raise BadInput(f"a token needs a label of 1-{MAX_LABEL_CHARS} characters"
                           " (what it is for: \"laptop Claude Code\")")
        if not team or not user:
            raise BadInput("a token is a Slack user's: give their workspace and user ids")
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = McpToken(uuid.uuid4().hex[:12], team, user, label, made_by, self._clock(),
                         None, None, None)
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO mcp_tokens (token_hash, {_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (_hashed(secret), token.id, team, user, token.label, made_by, token.made_at,
                 None, None, None),
            )
        self._audited(token, "mcp.token_make", made_by, origin)
        return token, secret

    def holder(self, secret: str) -> McpToken | None:
        """Whose live token this is; None for an unknown or revoked one. Notes its use."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM mcp_tokens WHERE token_hash = ?", (_hashed(secret),)
            ).fetchone()
        token = None if row is None else _token(row)
        if token is None or token.revoked:
            return None
        now = self._clock()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY_S:
            with self._db.write() as conn:
                conn.execute("UPDATE mcp_tokens SET last_used_at = ? WHERE id = ?",
                             (now, token.id))
        return token

    def revoke(self, token_id: str, *, by: str, origin: str,
               user: str | None = None) -> McpToken:
        """Revoke a token at once (with ``user``: only if it is theirs)."""
        token = self.get(token_id)
        if token is None or (user is not None and token.user != user):
            raise BadInput(f"no MCP token with the id {token_id!r}: `thoth tokens list`"
                           " shows them")
        if token.revoked:
            return token
        with self._db.write() as conn:
            conn.execute(
                "UPDATE mcp_tokens SET revoked_at = ?, revoked_by = ?"
                " WHERE id = ? AND revoked_at IS NULL", (self._clock(), by, token_id))
        revoked = self.get(token_id)
        assert revoked is not None
        self._audited(revoked, "mcp.token_revoke", by, origin)
        return revoked

    def get(self, token_id: str) -> McpToken | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM mcp_tokens WHERE id = ?", (token_id,)).fetchone()
        return None if row is None else _token(row)

    def listed(self, team: str | None = None, user: str | None = None) -> list[McpToken]:
        """Tokens, newest first: everyone's, or one person's."""
        where, arguments = "1 = 1", tuple[str, ...]()
        if team is not None and user is not None:
            where, arguments = 'team = ? AND "user" = ?', (team, user)
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM mcp_tokens WHERE {where} ORDER BY made_at DESC",
                arguments).fetchall()
        return [_token(row) for row in rows]


    def _audited(self, token: McpToken, action: str, actor: str, origin: str) -> None:
        self._audit.record(actor=actor, action=action, target=f"token:{token.id}",
                           origin=origin, detail=f"{token.team}:{token.user} {token.label}")


def _hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _token(row: tuple[object, ...]) -> McpToken:
    (token_id, team, user, label, made_by, made_at, last_used_at, revoked_at,
     revoked_by) = row
    return McpToken(
        str(token_id), str(team), str(user), str(label), str(made_by), float(made_at),  # type: ignore[arg-type]
        None if last_used_at is None else float(last_used_at),  # type: ignore[arg-type]
        None if revoked_at is None else float(revoked_at),  # type: ignore[arg-type]
        None if revoked_by is None else str(revoked_by))
