"""The embedded engine: one SQLite file under THOTH_HOME, WAL, migrations on open, one
writer at a time.

Durability: every write is its own committed transaction with ``synchronous=FULL``,
so a process killed between two turns loses nothing that was acknowledged (and a
``write(durable=False)`` is committed with ``NORMAL``: a crash keeps it too, a power cut
a moment after may not).

A full disk (issue 55): a write that finds no room raises ``StorageFull`` and leaves
nothing of itself behind (its transaction is rolled back whole, whether SQLite did it
itself or not), the process's ``DependencyHealth`` says ``sqlite`` is failing, and the
next write that goes through says it is working again: no restart, no repair. Reads go
on all along (they need no room).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from layers.shared.dependency_health import SQLITE, DependencyHealth
from layers.shared.errors import ConfigurationError, StorageFull
from layers.shared.storage.database import Database, DatabaseDamaged
from layers.shared.storage.migrations import LEGACY_VERSIONS, RECORD_MIGRATION, Schema

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
# Below this much room on the file's filesystem, an I/O error on a write is taken for a
# full disk: SQLite reports ENOSPC as SQLITE_FULL on most paths, but as an I/O error
# (SQLITE_IOERR_WRITE, _SHMSIZE, _FSYNC) on some, which it does not tell apart from a
# failing disk. A few pages' worth: a write with more room than that did not fail for room.
NO_ROOM_BYTES = 64 * 1024


class SqliteDatabase(Database):
    """A connection to the SQLite file; ``write()`` serialises writers."""

    dialect = "sqlite"
    duplicate_key_errors = (sqlite3.IntegrityError,)
    skip_locked = ""

    def __init__(self, connection: sqlite3.Connection, path: Path,
                 health: DependencyHealth | None = None) -> None:
        self.connection = connection
        self.path = path
        self._health = health or DependencyHealth()
        # SQLite allows one writer per file; the lock keeps our own threads from
        # interleaving statements of two transactions on the shared connection.
        self._lock = threading.RLock()
        # flock is per open file: two threads of this process would both get it.
        self._exclusive_in_process = threading.Lock()

    @property
    def where(self) -> str:
        return str(self.path)

    @classmethod
    def open_file(cls, path: Path, *, schemas: Sequence[Schema],
                  health: DependencyHealth | None = None) -> SqliteDatabase:
        """Open (creating if needed) the database at ``path`` and run the pending
        migrations of ``schemas`` (in that order; each owner's in its own order);
        ``health`` is told when writes fail for want of room and when they go through again.

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
            database = cls(connection, path, health)
            problems = database.integrity_problems(limit=1)
            if problems:
                connection.close()
                raise DatabaseDamaged(path, problems[0])
            database.migrate(schemas)
        except (OSError, sqlite3.OperationalError) as error:
            if _no_room(error, path.parent):
                # Opening makes the -wal and -shm files beside it, which need room.
                raise StorageFull(str(path), str(error)) from error
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
        """A write transaction: committed on success, rolled back on any error; a write
        the disk has no room for raises ``StorageFull`` (nothing of it kept)."""
        with self._lock:
            if not durable:
                # In WAL mode, NORMAL commits without an fsync (about a millisecond here).
                self.connection.execute("PRAGMA synchronous = NORMAL")
            try:
                try:
                    self.connection.execute("BEGIN IMMEDIATE")
                    changes_before = self.connection.total_changes
                    try:
                        yield self.connection
                    except BaseException:
                        self._roll_back()
                        raise
                    self._commit()
                except sqlite3.Error as error:
                    if _no_room(error, self.path.parent):
                        self._health.failing(SQLITE, f"disk full: {self.path.parent}")
                        raise StorageFull(str(self.path), str(error)) from error
                    raise
                if self.connection.total_changes != changes_before:
                    # Only a write that changed rows found room: one that changed none
                    # (a lease renewal with no lease) commits on a full disk too, and
                    # would say "back" between two failures.
                    self._health.working(SQLITE)
            finally:
                if not durable:
                    self.connection.execute("PRAGMA synchronous = FULL")

    def _commit(self) -> None:
        try:
            self.connection.execute("COMMIT")
        except BaseException:
            # After SQLITE_FULL or an I/O error in COMMIT, SQLite "may or may not" have
            # rolled the transaction back itself (its result codes page): if it is still
            # open, it is ended here, or the next BEGIN would fail on this connection
            # for good.
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        """End the open transaction, if SQLite has not already: a statement that failed
        for room can roll the whole transaction back itself, and a ROLLBACK then would
        fail ("no transaction is active") in place of the error that says why."""
        if not self.connection.in_transaction:
            return
        try:
            self.connection.execute("ROLLBACK")
        except sqlite3.Error as error:
            # The error being raised is the one that says what went wrong.
            log.error("rolling back a failed write of %s failed too: %s", self.path, error)

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


def _no_room(error: Exception, directory: Path) -> bool:
    """Whether ``error`` is the disk under ``directory`` having no room for a write."""
    if isinstance(error, OSError):
        return error.errno == errno.ENOSPC
    name = getattr(error, "sqlite_errorname", "")
    if name == "SQLITE_FULL":
        return True
    if not name.startswith("SQLITE_IOERR"):
        return False
    try:
        found = os.statvfs(directory)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < NO_ROOM_BYTES


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
