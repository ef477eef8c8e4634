"""The two engines a ``Database`` runs on, opened by what names them: a SQLite file
(``THOTH_HOME/thoth.db``) or a PostgreSQL URL (``DATABASE_URL``). Kept apart from
``database.py`` so the abstraction imports neither of its engines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema


def open_sqlite(path: Path, *, schemas: Sequence[Schema]) -> Database:
    """The SQLite file at ``path`` (made if missing), its pending migrations run."""
    from layers.shared.storage.sqlite import SqliteDatabase

    return SqliteDatabase.open_file(path, schemas=schemas)


def connect_postgres(
    url: str, *, schemas: Sequence[Schema], named_by: str = "DATABASE_URL"
) -> Database:
    """The PostgreSQL database at ``url``, its pending migrations run; ``named_by`` is
    where the URL came from, for the error that says it cannot be reached."""
    from layers.shared.storage.postgres import PostgresDatabase

    return PostgresDatabase.connect_url(url, schemas=schemas, named_by=named_by)
