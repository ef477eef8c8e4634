"""The model's spend: every call's tokens and price, for the daily cost cap."""

from __future__ import annotations

from layers.storage.migrations import Migration, Schema

# Named, ordered, forward-only: never edit one that has shipped, add the next.
SCHEMA = Schema(
    "model_usage",
    (
        Migration(
            1,
            "model_usage",
            """
            -- Every model call's tokens and price, for the daily cost cap.
            CREATE TABLE model_usage (
                rowid INTEGER PRIMARY KEY,
                at REAL NOT NULL,
                session_id TEXT,
                purpose TEXT NOT NULL,
                model TEXT NOT NULL,
                input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL,
                cache_read_tokens INTEGER NOT NULL,
                cache_write_tokens INTEGER NOT NULL,
                cost_usd REAL NOT NULL
            );
            CREATE INDEX model_usage_at ON model_usage (at);
            """,
        ),
    ),
)
