"""What the connections keep, sealed where it is a secret: registrations with
authorization servers, sign-ins under way, and each person's tokens.

Only this module opens a sealed token, and only to hand it to the one server it is for
(``oauth_client.py``): no row is ever read back in clear anywhere else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from layers.shared.storage.database import Database
from layers.shared.token_cipher import TokenCipher

# How long a sign-in may take, from the link to the browser's return.
START_LIFETIME_S = 15 * 60.0


@dataclass(frozen=True)
class Registration:
    """Thoth as a client of one authorization server."""

    client_id: str
    client_secret: str | None
    # "none", "client_secret_post" or "client_secret_basic" (RFC 7591).
    auth_method: str


@dataclass(frozen=True)
class Start:
    """A sign-in under way."""

    state: str
    team: str
    user: str
    server: str
    ask_id: str | None
    verifier: str
    client_id: str
    issuer: str
    resource: str
    token_endpoint: str
    revocation_endpoint: str | None
    redirect_uri: str
    expires_at: float


@dataclass(frozen=True)
class Tokens:
    access: str
    refresh: str | None
    scope: str | None
    expires_at: float | None


@dataclass(frozen=True)
class Connection:
    """A person's connection to one server, as it may be shown (no token)."""

    team: str
    user: str
    server: str
    issuer: str
    resource: str
    client_id: str
    token_endpoint: str
    revocation_endpoint: str | None
    scope: str | None
    expires_at: float | None
    connected_at: float
    last_used_at: float | None


_CONNECTION = ('team, "user", server, issuer, resource, client_id, token_endpoint,'
               " revocation_endpoint, scope, expires_at, connected_at, last_used_at")


class ConnectionStore:
    def __init__(self, db: Database, cipher: TokenCipher) -> None:
        self._db = db
        self._cipher = cipher

    # -- registrations -------------------------------------------------------------

    def registration(self, server: str, issuer: str, redirect_uri: str) -> Registration | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT client_id, client_secret_sealed, auth_method FROM connection_clients"
                " WHERE server = ? AND issuer = ? AND redirect_uri = ?",
                (server, issuer, redirect_uri)).fetchone()
        if row is None:
            return None
        return Registration(str(row[0]), self._cipher.open(row[1]) if row[1] else None,
                            str(row[2]))

    def register(self, server: str, issuer: str, redirect_uri: str,
                 registration: Registration) -> None:
        sealed = (self._cipher.seal(registration.client_secret)
                  if registration.client_secret else None)
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM connection_clients WHERE server = ? AND issuer = ?"
                " AND redirect_uri = ?", (server, issuer, redirect_uri))
            conn.execute(
                "INSERT INTO connection_clients (server, issuer, redirect_uri, client_id,"
                " client_secret_sealed, auth_method, registered_at) VALUES"
                " (?, ?, ?, ?, ?, ?, ?)",
                (server, issuer, redirect_uri, registration.client_id, sealed,
                 registration.auth_method, time.time()))

    def forget_registration(self, server: str, issuer: str) -> None:
        """A registration the server no longer knows: the next sign-in registers anew."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM connection_clients WHERE server = ? AND issuer = ?",
                         (server, issuer))

    # -- sign-ins under way ----------------------------------------------------------

    def begin(self, start: Start) -> None:
        with self._db.write() as conn:
            # Lapsed ones go as new ones come: nothing else needs to sweep them.
            conn.execute("DELETE FROM connection_starts WHERE expires_at < ?", (time.time(),))
            conn.execute(
                'INSERT INTO connection_starts (state, team, "user", server, ask_id,'
                " verifier_sealed, client_id, issuer, resource, token_endpoint,"
                " revocation_endpoint, redirect_uri, started_at, expires_at) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (start.state, start.team, start.user, start.server, start.ask_id,
                 self._cipher.seal(start.verifier), start.client_id, start.issuer,
                 start.resource, start.token_endpoint, start.revocation_endpoint,
                 start.redirect_uri, time.time(), start.expires_at))

    def begun_by(self, state: str) -> tuple[str, str] | None:
        """Who began the sign-in ``state`` names (workspace, person), if it waits."""
        with self._db.read() as conn:
            row = conn.execute('SELECT team, "user" FROM connection_starts WHERE state = ?',
                               (state,)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def take_start(self, state: str, team: str, user: str) -> Start | None:
        """The sign-in ``state`` names, once, for the person who began it: a second
        return with it finds nothing, and someone else's takes nothing."""
        with self._db.write() as conn:
            row = conn.execute(
                'SELECT state, team, "user", server, ask_id, verifier_sealed, client_id,'
                " issuer, resource, token_endpoint, revocation_endpoint, redirect_uri,"
                ' expires_at FROM connection_starts WHERE state = ? AND team = ? AND "user" = ?',
                (state, team, user)).fetchone()
            if row is None:
                return None
            taken = conn.execute("DELETE FROM connection_starts WHERE state = ?", (state,))
            if taken.rowcount != 1:
                return None
        return Start(str(row[0]), str(row[1]), str(row[2]), str(row[3]), row[4],
                     self._cipher.open(str(row[5])), str(row[6]), str(row[7]), str(row[8]),
                     str(row[9]), row[10], str(row[11]), float(row[12]))

    # -- connections -----------------------------------------------------------------

    def connect(self, start: Start, tokens: Tokens) -> None:
        now = time.time()
        with self._db.write() as conn:
            conn.execute('DELETE FROM connections WHERE team = ? AND "user" = ? AND server = ?',
                         (start.team, start.user, start.server))
            conn.execute(
                f"INSERT INTO connections ({_CONNECTION}, access_sealed, refresh_sealed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (start.team, start.user, start.server, start.issuer, start.resource,
                 start.client_id, start.token_endpoint, start.revocation_endpoint,
                 tokens.scope, tokens.expires_at, now, None,
                 self._cipher.seal(tokens.access),
                 self._cipher.seal(tokens.refresh) if tokens.refresh else None))

    def renewed(self, team: str, user: str, server: str, tokens: Tokens) -> None:
        """The renewed tokens kept, and the renewal's hold let go."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE connections SET access_sealed = ?, refresh_sealed = ?, scope = ?,"
                ' expires_at = ?, renewing_until = NULL WHERE team = ? AND "user" = ?'
                " AND server = ?",
                (self._cipher.seal(tokens.access),
                 self._cipher.seal(tokens.refresh) if tokens.refresh else None,
                 tokens.scope, tokens.expires_at, team, user, server))

    def hold_renewal(self, team: str, user: str, server: str, until: float) -> bool:
        """Whether this process may renew the token now: none other holds it (or its hold
        lapsed, the process gone). Held until ``until`` or ``renewed``/``let_go``."""
        with self._db.write() as conn:
            cursor = conn.execute(
                'UPDATE connections SET renewing_until = ? WHERE team = ? AND "user" = ?'
                " AND server = ? AND (renewing_until IS NULL OR renewing_until < ?)",
                (until, team, user, server, time.time()))
        return cursor.rowcount == 1

    def let_go(self, team: str, user: str, server: str) -> None:
        with self._db.write() as conn:
            conn.execute('UPDATE connections SET renewing_until = NULL WHERE team = ?'
                         ' AND "user" = ? AND server = ?', (team, user, server))

    def get(self, team: str, user: str, server: str) -> Connection | None:
        with self._db.read() as conn:
            row = conn.execute(
                f'SELECT {_CONNECTION} FROM connections WHERE team = ? AND "user" = ?'
                " AND server = ?", (team, user, server)).fetchone()
        return None if row is None else _connection(row)

    def tokens(self, team: str, user: str, server: str) -> Tokens | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT access_sealed, refresh_sealed, scope, expires_at FROM connections"
                ' WHERE team = ? AND "user" = ? AND server = ?', (team, user, server)).fetchone()
        if row is None:
            return None
        return Tokens(self._cipher.open(str(row[0])),
                      self._cipher.open(str(row[1])) if row[1] else None, row[2],
                      None if row[3] is None else float(row[3]))

    def used(self, team: str, user: str, server: str) -> None:
        with self._db.write(durable=False) as conn:
            conn.execute('UPDATE connections SET last_used_at = ? WHERE team = ? AND "user" = ?'
                         " AND server = ?", (time.time(), team, user, server))

    def remove(self, team: str, user: str, server: str) -> bool:
        with self._db.write() as conn:
            cursor = conn.execute(
                'DELETE FROM connections WHERE team = ? AND "user" = ? AND server = ?',
                (team, user, server))
        return cursor.rowcount > 0

    def of_person(self, team: str, user: str) -> list[Connection]:
        with self._db.read() as conn:
            rows = conn.execute(
                f'SELECT {_CONNECTION} FROM connections WHERE team = ? AND "user" = ?'
                " ORDER BY server", (team, user)).fetchall()
        return [_connection(row) for row in rows]

    def of_user(self, user: str) -> list[Connection]:
        """A person's connections in every workspace (a user id is one person's across
        an Enterprise Grid org)."""
        with self._db.read() as conn:
            rows = conn.execute(
                f'SELECT {_CONNECTION} FROM connections WHERE "user" = ? ORDER BY team, server',
                (user,)).fetchall()
        return [_connection(row) for row in rows]

    def of_workspace(self, team: str) -> list[Connection]:
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_CONNECTION} FROM connections WHERE team = ?"
                ' ORDER BY "user", server', (team,)).fetchall()
        return [_connection(row) for row in rows]

    def people_by_server(self) -> dict[str, int]:
        """How many people are connected to each server (the operator's view)."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT server, COUNT(*) FROM connections GROUP BY server"
                                " ORDER BY server").fetchall()
        return {str(row[0]): int(row[1]) for row in rows}

    def reseal(self) -> int:
        """Every sealed value sealed again with the first key; how many rows."""
        changed = 0
        with self._db.write() as conn:
            for table, key, columns in (
                ("connections", 'team, "user", server', ("access_sealed", "refresh_sealed")),
                ("connection_clients", "server, issuer, redirect_uri",
                 ("client_secret_sealed",)),
                ("connection_starts", "state", ("verifier_sealed",)),
            ):
                for row in conn.execute(f"SELECT {key}, {', '.join(columns)} FROM {table}"
                                        ).fetchall():
                    keys = row[:key.count(",") + 1]
                    values = [None if value is None else self._cipher.reseal(str(value))
                              for value in row[len(keys):]]
                    where = " AND ".join(f"{column.strip()} = ?" for column in key.split(","))
                    conn.execute(
                        f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in columns)}"
                        f" WHERE {where}", (*values, *keys))
                    changed += 1
        return changed


def _connection(row: Any) -> Connection:
    return Connection(str(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]),
                      str(row[5]), str(row[6]), row[7], row[8],
                      None if row[9] is None else float(row[9]), float(row[10]),
                      None if row[11] is None else float(row[11]))
