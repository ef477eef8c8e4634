"""The audit log's table."""

from __future__ import annotations

from layers.shared.storage.migrations import Migration, Schema

SCHEMA = Schema(
    "audit",
    (
        Migration(
            1,
            "audit_log",
            portable="""
            -- Append-only: nothing updates or deletes a row (layers/shared/audit/log.py).
            CREATE TABLE audit_log (
                id {serial},
                at {real} NOT NULL,
                actor TEXT NOT NULL,
                action TEXT NOT NULL,
                target TEXT NOT NULL,
                detail TEXT NOT NULL,
                origin TEXT NOT NULL
            );
            CREATE INDEX audit_log_at ON audit_log (at);
            """,
        ),
    ),
)
