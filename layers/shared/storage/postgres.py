"""The shared engine: PostgreSQL through a psycopg connection pool.

One writer at a time, as on SQLite: every write transaction first takes one
transaction-level advisory lock, so each store's read-then-write stays as correct
across processes (replicas, workers) as it is across threads on one SQLite file,
with no store written twice. Reads take no lock (each statement sees what was
committed before it, as in SQLite's WAL). Decided: correctness the same on both
engines first; finer locks where a measurement shows the one lock is the bottleneck.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from layers.shared.dependency_health import POSTGRES, DependencyHealth
from layers.shared.errors import ConfigurationError, DatabaseAway
from layers.shared.storage.connection import Parameters
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import RECORD_MIGRATION, Migration, Schema

log = logging.getLogger(__name__)

# pg_advisory_xact_lock's key for "the one writer" (any constant; "thoth" in ASCII).
WRITE_LOCK = 0x74686F7468
POOL_MIN = 1
POOL_MAX = 10
CONNECT_TIMEOUT_S = 10.0
# How long a caller waits for a pooled connection before it hears the database is away:
# a restart during a deploy takes a few seconds; callers that must not lose what they
# hold (the Slack intake, a delivery's turn) try again themselves.
POOL_WAIT_S = 10.0
# How long the pool keeps reconnecting with its growing backoff (1, 2, 4 s…) before it
# lets the attempt go; the next caller starts a new one at 1 s. Short, so a database back
# after a long outage is reconnected to within seconds, not after a 30 s backoff step.
RECONNECT_WINDOW_S = 5.0


class PostgresConnection:
    """A psycopg connection that reads the stores' ``?`` / ``:name`` placeholders."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Parameters = (), /) -> psycopg.Cursor[Any]:
        if not parameters:
            # No parameters: psycopg sends the text as it is (a % stays a %).
            return self._connection.execute(sql)
        return self._connection.execute(format_style(sql), parameters)

    def executemany(
        self, sql: str, seq_of_parameters: Iterable[Parameters], /
    ) -> psycopg.Cursor[Any]:
        cursor = self._connection.cursor()
        cursor.executemany(format_style(sql), seq_of_parameters)
        return cursor


@lru_cache(maxsize=1024)
def format_style(sql: str) -> str:
    """``?`` → ``%s`` and ``:name`` → ``%(name)s`` outside quoted text and identifiers
    (``::`` casts are left alone); ``%`` → ``%%`` everywhere, since psycopg reads it
    inside literals too."""
    out: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(sql):
        char = sql[index]
        if quote is not None:
            out.append("%%" if char == "%" else char)
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        elif char == ":" and sql[index + 1 : index + 2] == ":":
            out.append("::")
            index += 1
        elif char == ":" and _starts_name(sql[index + 1 : index + 2]):
            end = index + 1
            while end < len(sql) and (sql[end].isalnum() or sql[end] == "_"):
                end += 1
            out.append(f"%({sql[index + 1 : end]})s")
            index = end - 1
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _first_line(error: Exception) -> str:
    """libpq's message, its lines joined: one line for a person."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines) if lines else type(error).__name__


def _away(error: Exception) -> bool:
    """Whether ``error`` says the database is away rather than that a statement failed:
    no connection (none made, none lent in time, the server closed it: SQLSTATE class 08,
    57P01-57P03). A deadlock, a statement timeout or a full disk on the server are the
    statement's failures, said as they are."""
    if isinstance(error, PoolTimeout):
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def _starts_name(char: str) -> bool:
    return char.isalpha() or char == "_"


class PostgresDatabase(Database):
    dialect = "postgresql"
    duplicate_key_errors = (psycopg.errors.UniqueViolation,)
    skip_locked = " FOR UPDATE SKIP LOCKED"
    # Raised for a connection the server closed or that cannot be made, and when none
    # came within POOL_WAIT_S (``_away``), with psycopg's error as its cause.
    unavailable_errors = (DatabaseAway,)

    def __init__(self, pool: ConnectionPool[psycopg.Connection[Any]], url: str,
                 health: DependencyHealth | None = None) -> None:
        self._pool = pool
        self._url = url
        self._health = health or DependencyHealth()

    @property
    def where(self) -> str:
        return redacted_url(self._url)

    @classmethod
    def connect_url(
        cls, url: str, *, schemas: Sequence[Schema], named_by: str = "DATABASE_URL",
        health: DependencyHealth | None = None,
    ) -> PostgresDatabase:
        """``named_by``: the setting or option the URL came from, for the error;
        ``health``: told when the database goes away and comes back."""
        try:
            # One connection first: a refused port or a bad password is said at once,
            # where the pool would retry in the background until its timeout.
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT_S)).close()
        except psycopg.Error as error:
            raise ConfigurationError(
                f"cannot connect to the database {redacted_url(url)}: {_first_line(error)}"
                f" (check {named_by}, and that PostgreSQL is running)"
            ) from error
        pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=POOL_MIN,
            max_size=POOL_MAX,
            kwargs={"autocommit": True},
            open=False,
            name="thoth",
            # A connection the server closed in a restart is found out when it is lent,
            # not by the caller it was lent to.
            check=ConnectionPool.check_connection,
            timeout=POOL_WAIT_S,
            reconnect_timeout=RECONNECT_WINDOW_S,
        )
        try:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except Exception as error:
            pool.close()
            raise ConfigurationError(
                f"cannot connect to the database {redacted_url(url)}: {_first_line(error)}"
                f" (check {named_by}, and that PostgreSQL is running)"
            ) from error
        database = cls(pool, url, health)
        try:
            database.migrate(schemas)
        except BaseException:
            pool.close()
            raise
        return database

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; the database said failing while it is away, and working
        again once a block runs through."""
        try:
            with self._pool.connection() as connection:
                yield connection
        except (psycopg.OperationalError, PoolTimeout) as error:
            if not _away(error):
                raise
            self._health.failing(POSTGRES, _first_line(error))
            raise DatabaseAway(f"the database {self.where} is away: {_first_line(error)}"
                               ) from error
        self._health.working(POSTGRES)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[PostgresConnection]:
        with self._connection() as connection, connection.transaction():
            if not durable:
                # PostgreSQL's asynchronous commit: the same promise as SQLite's NORMAL.
                connection.execute("SET LOCAL synchronous_commit = off")
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield PostgresConnection(connection)

    @contextmanager
    def claim(self) -> Iterator[PostgresConnection]:
        # No writer lock: the claim's own row locks keep two workers off one row.
        with self._connection() as connection, connection.transaction():
            yield PostgresConnection(connection)

    @contextmanager
    def read(self) -> Iterator[PostgresConnection]:
        with self._connection() as connection:
            yield PostgresConnection(connection)

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        # A session lock on a connection kept for the block: PostgreSQL lets it go
        # when the connection drops, so a killed holder never blocks the others.
        with self._connection() as connection:
            connection.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
            try:
                yield
            finally:
                # A connection lost in the block took its lock with it: nothing to let go,
                # and the block's own error (if any) is the one to hear.
                if not connection.closed:
                    connection.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))

    def engine(self) -> str:
        with self.read() as conn:
            (version,) = conn.execute("SHOW server_version").fetchone() or ("?",)
            vector = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        stats = self._pool.get_stats()
        pgvector = f"pgvector {vector[0]} available" if vector else "no pgvector"
        return (
            f"PostgreSQL {version}, {pgvector}, pool {stats.get('pool_size', 0)} open of"
            f" {POOL_MAX}"
        )

    def applied(self) -> set[tuple[str, int]]:
        with self.read() as conn:
            rows = conn.execute("SELECT owner, version FROM schema_migrations").fetchall()
        return {(str(owner), int(version)) for owner, version in rows}

    def migrate(self, schemas: Sequence[Schema]) -> None:
        """Apply, in order, each migration not yet recorded. Replicas starting at once
        take turns (the write lock), and each checks the record under it."""
        with self.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (owner TEXT NOT NULL,"
                " version INTEGER NOT NULL, name TEXT NOT NULL,"
                " applied_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (owner, version))"
            )
        for schema in schemas:
            for migration in schema.migrations:
                text = migration.text_for("postgresql")
                if text is None:
                    raise ConfigurationError(
                        f"{schema.owner} migration {migration.version} ({migration.name}) has"
                        " no PostgreSQL text yet: leave DATABASE_URL unset to use SQLite"
                    )
                with self.write() as conn:
                    recorded = conn.execute(
                        "SELECT 1 FROM schema_migrations WHERE owner = ? AND version = ?",
                        (schema.owner, migration.version),
                    ).fetchone()
                    if recorded:
                        continue
                    try:
                        conn.execute(text)
                    except psycopg.Error as error:
                        raise MigrationFailed(self.where, schema, migration, error) from error
                    conn.execute(
                        RECORD_MIGRATION,
                        (schema.owner, migration.version, migration.name, time.time()),
                    )
                log.info("applied migration %s %s %s", schema.owner, migration.version,
                         migration.name)

    def integrity_problems(self, limit: int = 5) -> list[str]:
        # PostgreSQL checks its own pages (data checksums, WAL); a connection that
        # answers is what this engine can promise here.
        try:
            with self.read() as conn:
                conn.execute("SELECT 1").fetchone()
        except psycopg.Error as error:
            return [str(error)]
        return []

    def close(self) -> None:
        self._pool.close()


class MigrationFailed(ConfigurationError):
    """PostgreSQL refused a migration (it was rolled back); the message says the fix."""

    def __init__(
        self, where: str, schema: Schema, migration: Migration, error: psycopg.Error
    ) -> None:
        found = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        if "extension" in found and "vector" in found:
            fix = (
                "pgvector must be installed on the server and enabled in this database: run"
                " `CREATE EXTENSION vector;` in it as a superuser, then start Thoth again"
            )
        else:
            fix = "fix what PostgreSQL says and start Thoth again; nothing of it was applied"
        super().__init__(
            f"{schema.owner} migration {migration.version} ({migration.name}) failed on"
            f" {where}: {found}: {fix}"
        )


def redacted_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))
