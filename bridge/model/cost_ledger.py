"""Every model call's cost in SQLite, summed per day for the daily cap.

The day is the UTC day: the cap resets at midnight UTC, the same moment for
every member of a team spread over time zones.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

from bridge.model.pricing import Usage
from layers.storage.database import Database


class CostLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record_all(
        self,
        calls: Sequence[tuple[str, Usage, float]],
        *,
        purpose: str = "turn",
        session_id: str | None = None,
        now: float | None = None,
    ) -> None:
        """Store (model, usage, cost) of each call, in one transaction."""
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            conn.executemany(
                "INSERT INTO model_usage (at, session_id, purpose, model, input_tokens,"
                " output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        moment,
                        session_id,
                        purpose,
                        model,
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens,
                        cost,
                    )
                    for model, usage, cost in calls
                ],
            )

    def spent_in_session(self, session_id: str) -> float:
        with self._db.read() as conn:
            (total,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return float(total)

    def spent_today(self, *, now: float | None = None) -> float:
        moment = time.time() if now is None else now
        day = datetime.fromtimestamp(moment, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        with self._db.read() as conn:
            (total,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage WHERE at >= ? AND at < ?",
                (day.timestamp(), day.timestamp() + 86_400),
            ).fetchone()
        return float(total)
