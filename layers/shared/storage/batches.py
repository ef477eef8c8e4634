"""Deleting many rows by their keys, a bounded number a statement: each statement's
parameters stay well under SQLite's limit and PostgreSQL's, however many keys."""

from __future__ import annotations

from collections.abc import Sequence

from layers.shared.storage.connection import Connection

# Keys a statement.
BATCH = 500


def delete_in(conn: Connection, table: str, column: str, keys: Sequence[object]) -> int:
    """Delete the rows of ``table`` whose ``column`` is one of ``keys``; how many went.
    ``table`` and ``column`` are the caller's own names, never input."""
    deleted = 0
    for start in range(0, len(keys), BATCH):
        batch = list(keys[start : start + BATCH])
        deleted += int(conn.execute(
            f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * len(batch))})",
            batch).rowcount or 0)
    return deleted
