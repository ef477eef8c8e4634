"""The embedded engine: one SQLite file under THOTH_HOME, WAL, migrations on open, one
writer at a time.

Durability: every write is its own committed transaction with ``synchronous=FULL``,
so a process killed between two turns loses nothing that was acknowledged (and a
``write(durable=False)`` is committed with ``NORMAL``: a crash keeps it too, a power cut
a moment after may not).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from layers.shared.errors import ConfigurationError
from layers.shared.storage.database import Database, DatabaseDamaged
from layers.shared.storage.migrations import LEGACY_VERSIONS, RECORD_MIGRATION, Schema

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000


class SqliteDatabase(Database):
    """A connection to the SQLite file; ``write()`` serialises writers."""

    dialect = "sqlite"
    duplicate_key_errors = (sqlite3.IntegrityError,)
    skip_locked = ""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path
        # SQLite allows one writer per file; the lock keeps our own threads from
        # interleaving statements of two transactions on the shared connection.
        self._lock = threading.RLock()
        # flock is per open file: two threads of this process would both get it.
        self._exclusive_in_process = threading.Lock()

    @property
    def where(self) -> str:
        return str(self.path)

    @classmethod
    def open_file(cls, path: Path, *, schemas: Sequence[Schema]) -> SqliteDatabase:
        """Open (creating if needed) the database at ``path`` and run the pending
        migrations of ``schemas`` (in that order; each owner's in its own order).

        Raises ``DatabaseDamaged`` when the file is not sound, before anything is
        written: every page is checked (SQLite's quick check reads ~1 GB/s, about 0.1 s
        for a 100 MB file), so no command answers from, or writes into, a damaged file
        and finds out halfway.
        """
        try:
            # THOTH_HOME and the database are the owner's alone (DMs and private channels
            # are in them); SQLite gives its -wal and -shm files the database's mode.
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not path.exists():
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            connection = sqlite3.connect(
                path,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
                isolation_level=None,
            )
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            database = cls(connection, path)
            problems = database.integrity_problems(limit=1)
            if problems:
                connection.close()
                raise DatabaseDamaged(path, problems[0])
            database.migrate(schemas)
        except (OSError, sqlite3.OperationalError) as error:
            raise ConfigurationError(
                f"cannot open the database {path}: {error} (set THOTH_HOME to a writable directory)"
            ) from error
        except sqlite3.DatabaseError as error:
            raise DatabaseDamaged(path, error) from error
        return database

    def integrity_problems(self, limit: int = 5) -> list[str]:
        """SQLite's own check of every page (``PRAGMA quick_check``); empty when sound."""
        with self._lock:
            try:
                rows = self.connection.execute(f"PRAGMA quick_check({limit})").fetchall()
            except sqlite3.DatabaseError as error:
                return [str(error)]
        found = [str(row[0]) for row in rows]
        return [] if found == ["ok"] else found

    def close(self) -> None:
        with self._lock:
            self.connection.close()

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed on success, rolled back on any error."""
        with self._lock:
            if not durable:
                # In WAL mode, NORMAL commits without an fsync (about a millisecond here).
                self.connection.execute("PRAGMA synchronous = NORMAL")
            try:
                self.connection.execute("BEGIN IMMEDIATE")
                try:
                    yield self.connection
                except BaseException:
                    self.connection.execute("ROLLBACK")
                    raise
                self.connection.execute("COMMIT")
            finally:
                if not durable:
                    self.connection.execute("PRAGMA synchronous = FULL")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection for reads, held so no writer's transaction interleaves."""
        with self._lock:
            yield self.connection

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        # Processes sharing a SQLite file share its machine: a file lock beside it.
        lock_path = self.path.with_name(f"{self.path.name}.{name}.lock")
        with self._exclusive_in_process, open(lock_path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def engine(self) -> str:
        return f"SQLite {sqlite3.sqlite_version}, WAL"

    def applied(self) -> set[tuple[str, int]]:
        """The migrations recorded, as (owner, version)."""
        with self.read() as conn:
            rows = conn.execute("SELECT owner, version FROM schema_migrations").fetchall()
        return {(str(owner), int(version)) for owner, version in rows}

    def migrate(self, schemas: Sequence[Schema]) -> None:
        """Apply, in order, each migration not yet recorded."""
        with self.write() as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(schema_migrations)")}
            if columns and "owner" not in columns:
                _adopt_legacy_record(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (owner TEXT NOT NULL,"
                " version INTEGER NOT NULL, name TEXT NOT NULL, applied_at REAL NOT NULL,"
                " PRIMARY KEY (owner, version))"
            )
        applied = self.applied()
        for schema in schemas:
            for migration in schema.migrations:
                if (schema.owner, migration.version) in applied:
                    continue
                with self.write() as conn:
                    # executescript would COMMIT our transaction; run statement by statement.
                    for statement in _split_statements(migration.text_for("sqlite") or ""):
                        conn.execute(statement)
                    conn.execute(
                        RECORD_MIGRATION,
                        (schema.owner, migration.version, migration.name, time.time()),
                    )
                log.info("applied migration %s %s %s", schema.owner, migration.version,
                         migration.name)


def _adopt_legacy_record(conn: sqlite3.Connection) -> None:
    """Rewrite the one-sequence record of an older database as (owner, version) rows."""
    legacy = conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall()
    unknown = sorted(int(version) for version, _ in legacy if int(version) not in LEGACY_VERSIONS)
    if unknown:
        raise ConfigurationError(
            f"the database records migrations {unknown} this Thoth does not know: it was"
            " made by a newer Thoth; run that version"
        )
    conn.execute("ALTER TABLE schema_migrations RENAME TO schema_migrations_legacy")
    conn.execute(
        "CREATE TABLE schema_migrations (owner TEXT NOT NULL, version INTEGER NOT NULL,"
        " name TEXT NOT NULL, applied_at REAL NOT NULL, PRIMARY KEY (owner, version))"
    )
    for version, applied_at in legacy:
        for owner, owned_version, name in LEGACY_VERSIONS.get(int(version), ()):
            conn.execute(
                RECORD_MIGRATION,
                (owner, owned_version, name, applied_at),
            )
    conn.execute("DROP TABLE schema_migrations_legacy")
    log.info("recorded %d earlier migrations by their owners", len(legacy))


def _split_statements(script: str) -> list[str]:
    """Split a migration into complete statements (triggers contain inner semicolons)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
