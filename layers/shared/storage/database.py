"""The Thoth database, on one of two engines.

``DATABASE_URL`` unset: one SQLite file under ``THOTH_HOME`` (``sqlite.py``), the
embedded default. ``DATABASE_URL=postgresql://…``: PostgreSQL through a psycopg pool
(``postgres.py``), which many processes share. Stores see only this class: ``write()``
is one transaction (one writer at a time on both engines), ``read()`` a connection
for reads; what they may ask of a connection is ``connection.py``'s.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

from layers.shared.errors import ConfigurationError
from layers.shared.storage.connection import Connection

Dialect = Literal["sqlite", "postgresql"]


class DatabaseDamaged(ConfigurationError):
    """The SQLite file is not a database, or its pages are damaged."""

    def __init__(self, path: Path, error: Exception | str) -> None:
        # SQLite's integrity report spans lines ("*** in database main ***\n Page 4: ...").
        found = " ".join(str(error).replace("*** in database main ***", "").split())
        super().__init__(
            f"the database {path} is damaged ({found}): restore it from a backup, or move it"
            " aside and run `thoth init` to start a new one (`thoth episodes import` reloads"
            " exported episodes)"
        )
        self.path = path


class Database(ABC):
    dialect: Dialect
    # What a write raises when a unique key is taken (the driver's own error).
    duplicate_key_errors: tuple[type[Exception], ...]
    # Appended to a queue's SELECT inside ``claim()``: rows another process is claiming
    # are passed over, not waited for (empty where one writer at a time makes it moot).
    skip_locked: str
    # What an engine raises while the database is away for a while (a restart, a
    # failover): the caller may keep what it holds and try again once it is back.
    unavailable_errors: tuple[type[Exception], ...] = ()

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the data lives, for messages (a path, or a URL without its password)."""

    @abstractmethod
    def write(self, *, durable: bool = True) -> AbstractContextManager[Connection]:
        """A write transaction: committed on success, rolled back on any error.

        ``durable=False`` for a record whose loss in a power cut is tolerable (the audit's
        line for a read, a token's last use): its commit does not wait for the disk. It
        survives a crash of Thoth as any write does, and never leaves the data half
        written; only the machine losing power within a moment of it can undo it."""

    def claim(self) -> AbstractContextManager[Connection]:
        """A write transaction for a queue's claim, which locks only the rows it takes
        (``SELECT … {skip_locked}``): workers claiming at once do not wait for each
        other or for the one writer. Where rows cannot be locked alone, ``write()``."""
        return self.write()

    @abstractmethod
    def read(self) -> AbstractContextManager[Connection]:
        """A connection for reads."""

    @abstractmethod
    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Held by one process at a time among all sharing this database, until the block
        ends or the process dies; for work outside the database that must not interleave
        (the brain's git writes). Waits for the holder."""

    @abstractmethod
    def engine(self) -> str:
        """The engine, its version and what it has (for `thoth doctor`)."""

    @abstractmethod
    def applied(self) -> set[tuple[str, int]]:
        """The migrations recorded, as (owner, version)."""

    @abstractmethod
    def integrity_problems(self, limit: int = 5) -> list[str]:
        """The engine's own check of the stored data; empty when sound."""

    @abstractmethod
    def close(self) -> None: ...
