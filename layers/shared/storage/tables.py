"""The storage layer's own table: named leases (``leases.py``)."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "storage",
    (
        Migration(
            1,
            "leases",
            """
            -- Which process holds a job only one should run at a time, and until when.
            CREATE TABLE leases (
                name TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                held_until REAL NOT NULL
            );
            """,
            postgres="""
            CREATE TABLE leases (
                name TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                held_until DOUBLE PRECISION NOT NULL
            );
            """,
        ),
    ),
)
