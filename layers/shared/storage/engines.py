"""The two engines a ``Database`` runs on, opened by what names them: a SQLite file
(``THOTH_HOME/thoth.db``) or a PostgreSQL URL (``DATABASE_URL``). Kept apart from
``database.py`` so the abstraction imports neither of its engines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from layers.shared.dependency_health import DependencyHealth
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema


def open_sqlite(path: Path, *, schemas: Sequence[Schema],
                health: DependencyHealth | None = None) -> Database:
    """The SQLite file at ``path`` (made if missing), its pending migrations run;
    ``health`` is told when its disk is full and when writes go through again."""
    from layers.shared.storage.sqlite import SqliteDatabase

    return SqliteDatabase.open_file(path, schemas=schemas, health=health)


def connect_postgres(
    url: str, *, schemas: Sequence[Schema], named_by: str = "DATABASE_URL",
    health: DependencyHealth | None = None,
) -> Database:
    """The PostgreSQL database at ``url``, its pending migrations run; ``named_by`` is
    where the URL came from, for the error that says it cannot be reached; ``health`` is
    told when it goes away and comes back."""
    from layers.shared.storage.postgres import PostgresDatabase

    return PostgresDatabase.connect_url(url, schemas=schemas, named_by=named_by,
                                        health=health)
