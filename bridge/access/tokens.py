"""Each person's tokens for MCP over HTTP: made for one Slack user, shown once, kept as a
hash, revocable.

A token is 32 random bytes (``secrets``), so a plain SHA-256 is the right hash: a slow
password hash protects guessable secrets, and nothing here is guessable. The prefix
``thoth_mcp_`` lets a person (and the redaction rules) tell one on sight.

Making and revoking a token is written to the audit log here, whoever asks (the
command line, ``/thoth``, the console): a token is access to someone's memory.

A person who signs in with Slack through an MCP client's OAuth (``oauth.py``) gets a token
of the same kind, listed and revocable with the others, that lapses after
``SIGNED_IN_TTL_S`` and is renewed with its refresh token: each renewal replaces both in
the same row (a refresh token works once), so one sign-in stays one line in the list.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.storage.database import Database

TOKEN_PREFIX = "thoth_mcp_"
REFRESH_PREFIX = "thoth_mcp_refresh_"
# What OAuth clients expect of an access token: an hour, then a silent renewal.
SIGNED_IN_TTL_S = 3600
# A client unused for a month signs in again.
REFRESH_TTL_S = 30 * 24 * 3600
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
    # Set for a sign-in through OAuth: when its access token lapses, and by which client.
    expires_at: float | None = None
    oauth_client: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@dataclass(frozen=True)
class SignedIn:
    """A sign-in's token and what the client holds of it (each shown once)."""
    token: McpToken
    access: str
    refresh: str


_COLUMNS = ('id, team, "user", label, made_by, made_at, last_used_at, revoked_at, revoked_by,'
            ' expires_at, oauth_client')


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
        self._inserted(token, secret, refresh=None)
        self._audited(token, "mcp.token_make", made_by, origin)
        return token, secret

    def signed_in(self, team: str, user: str, *, client_id: str, client_name: str,
                  origin: str) -> SignedIn:
        """A token for the person who just signed in with Slack through ``client_id``."""
        access, refresh = _access_and_refresh()
        now = self._clock()
        label = " ".join(f"{client_name} (signed in with Slack)".split())[:MAX_LABEL_CHARS]
        token = McpToken(uuid.uuid4().hex[:12], team, user, label, f"{team}:{user}", now,
                         None, None, None, now + SIGNED_IN_TTL_S, client_id)
        self._inserted(token, access, refresh=refresh)
        self._audited(token, "mcp.token_sign_in", token.made_by, origin)
        return SignedIn(token, access, refresh)

    def refreshed_by(self, refresh: str, client_id: str) -> SignedIn | None:
        """A sign-in's new access and refresh tokens for its live refresh token, which
        works this once; None for an unknown, spent, lapsed or revoked one, or another
        client's."""
        token = self.of_refresh(refresh, client_id)
        if token is None:
            return None
        access, renewed = _access_and_refresh()
        now = self._clock()
        with self._db.write() as conn:
            # Conditional on the old hash: of two renewals racing, one wins.
            changed = conn.execute(
                "UPDATE mcp_tokens SET token_hash = ?, refresh_hash = ?, expires_at = ?,"
                " refresh_expires_at = ?, spent_refresh_hash = refresh_hash"
                " WHERE id = ? AND refresh_hash = ? AND revoked_at IS NULL",
                (_hashed(access), _hashed(renewed), now + SIGNED_IN_TTL_S,
                 now + REFRESH_TTL_S, token.id, _hashed(refresh))).rowcount
        if changed != 1:
            return None
        return SignedIn(replace(token, expires_at=now + SIGNED_IN_TTL_S), access, renewed)

    def of_refresh(self, refresh: str, client_id: str) -> McpToken | None:
        """The live sign-in a refresh token of ``client_id`` renews, or None. The refresh
        token the last renewal replaced, shown again, ends its sign-in: two hold it, one
        a thief (OAuth 2.1's reuse detection), and Thoth cannot tell which."""
        if not refresh.startswith(REFRESH_PREFIX):
            return None
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS}, refresh_expires_at FROM mcp_tokens"
                " WHERE refresh_hash = ?", (_hashed(refresh),)).fetchone()
            spent = None if row is not None else conn.execute(
                "SELECT id, made_by FROM mcp_tokens WHERE spent_refresh_hash = ?"
                " AND revoked_at IS NULL", (_hashed(refresh),)).fetchone()
        if spent is not None:
            self.revoke(str(spent[0]), by=str(spent[1]), origin="a spent refresh token")
        if row is None:
            return None
        token, refresh_expires_at = _token(row[:-1]), row[-1]
        if (token.revoked or token.oauth_client != client_id
                or float(refresh_expires_at) <= self._clock()):
            return None
        return token

    def _inserted(self, token: McpToken, secret: str, *, refresh: str | None) -> None:
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO mcp_tokens (token_hash, refresh_hash, refresh_expires_at,"
                f" {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (_hashed(secret), None if refresh is None else _hashed(refresh),
                 None if refresh is None else token.made_at + REFRESH_TTL_S,
                 token.id, token.team, token.user, token.label, token.made_by,
                 token.made_at, None, None, None, token.expires_at, token.oauth_client),
            )

    def holder(self, secret: str) -> McpToken | None:
        """Whose live token this is; None for an unknown or revoked one. Notes its use."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM mcp_tokens WHERE token_hash = ?", (_hashed(secret),)
            ).fetchone()
        token = None if row is None else _token(row)
        now = self._clock()
        if token is None or token.revoked or (
                token.expires_at is not None and token.expires_at <= now):
            return None
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY_S:
            with self._db.write(durable=False) as conn:
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


def _access_and_refresh() -> tuple[str, str]:
    return (TOKEN_PREFIX + secrets.token_urlsafe(32),
            REFRESH_PREFIX + secrets.token_urlsafe(32))


def _hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _token(row: tuple[object, ...]) -> McpToken:
    (token_id, team, user, label, made_by, made_at, last_used_at, revoked_at,
     revoked_by, expires_at, oauth_client) = row
    return McpToken(
        str(token_id), str(team), str(user), str(label), str(made_by), float(made_at),  # type: ignore[arg-type]
        None if last_used_at is None else float(last_used_at),  # type: ignore[arg-type]
        None if revoked_at is None else float(revoked_at),  # type: ignore[arg-type]
        None if revoked_by is None else str(revoked_by),
        None if expires_at is None else float(expires_at),  # type: ignore[arg-type]
        None if oauth_client is None else str(oauth_client))
