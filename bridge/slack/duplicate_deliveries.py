"""Each Slack delivery is handled once: by event id, and by channel + message ts.

Persisted, so a restart in the middle of Slack's retries does not answer twice;
entries older than a day are swept (Slack stops retrying within minutes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database

TTL_S = 86_400.0


class SeenDeliveries:
    def __init__(self, db: Database) -> None:
        self._db = db

    def sweep(self, *, now: float | None = None) -> int:
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            return conn.execute(
                "DELETE FROM slack_seen WHERE seen_at < ?", (moment - TTL_S,)
            ).rowcount


def record_first_time(conn: Connection, keys: Sequence[str], now: float) -> bool:
    """Within a write transaction: record ``keys``; True only if none was seen before."""
    wanted = [key for key in keys if key]
    if not wanted:
        return True
    placeholders = ",".join("?" * len(wanted))
    seen = conn.execute(
        f"SELECT COUNT(*) FROM slack_seen WHERE key IN ({placeholders})", wanted
    ).fetchone()[0]
    conn.executemany(
        "INSERT INTO slack_seen (key, seen_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
        [(key, now) for key in wanted],
    )
    return int(seen) == 0
