"""What every memory layer stands on, and which is no layer itself: places and the
visibility rule, the embedding model, storage (SQLite or PostgreSQL, migrations),
redaction, the audit log, errors, backoff and the offloaded store."""
