"""Every model call's cost in the database, summed per day for the daily caps.

The day is the UTC day: the caps reset at midnight UTC, the same moment for
every member of a team spread over time zones. A call in flight holds a reservation of
its estimated cost (``reserve``) from the moment it is allowed until it is charged
(``settle``), so calls started at the same moment (one person's sixteen threads, or
several replicas) see each other and cannot pass the cap together.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from bridge.model.pricing import Usage
from layers.shared.errors import CostCapReached, PersonCapReached
from layers.shared.storage.database import Database

# Longer than any call can last (tries times the timeout): a reservation older than this
# belongs to a process that died before charging it.
RESERVATION_TTL_S = 900.0


class CostLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record_all(
        self,
        calls: Sequence[tuple[str, Usage, float]],
        *,
        purpose: str = "turn",
        session_id: str | None = None,
        person: str | None = None,
        now: float | None = None,
        settles: str | None = None,
    ) -> None:
        """Store (model, usage, cost) of each call, in one transaction (with the end of
        the reservation ``settles``, when the calls held one)."""
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            conn.executemany(
                "INSERT INTO model_usage (at, session_id, purpose, model, input_tokens,"
                " output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, person)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        person,
                    )
                    for model, usage, cost in calls
                ],
            )
            if settles is not None:
                conn.execute("DELETE FROM model_reservations WHERE id = ?", (settles,))

    def reserve(
        self, estimate_usd: float, *, cap_usd: float, person: str | None = None,
        person_cap_usd: float | None = None, now: float | None = None,
    ) -> str:
        """Allow a call and hold ``estimate_usd`` for it; raises ``CostCapReached`` when
        today's spend and the calls in flight are at the cap (or at the person's share).

        One write transaction checks and reserves: another call's reservation is seen
        (SQLite's writer lock, PostgreSQL's one-writer lock), never both let through.
        """
        moment = time.time() if now is None else now
        start, end = _day(moment)
        held_since = moment - RESERVATION_TTL_S
        with self._db.write() as conn:
            (spent,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage WHERE at >= ? AND at < ?",
                (start, end),
            ).fetchone()
            (held,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_reservations WHERE at >= ?",
                (held_since,),
            ).fetchone()
            if float(spent) + float(held) >= cap_usd:
                raise CostCapReached(cap_usd)
            if person is not None and person_cap_usd is not None:
                (theirs,) = conn.execute(
                    "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage"
                    " WHERE person = ? AND at >= ? AND at < ?",
                    (person, start, end),
                ).fetchone()
                (their_held,) = conn.execute(
                    "SELECT COALESCE(SUM(cost_usd), 0) FROM model_reservations"
                    " WHERE person = ? AND at >= ?",
                    (person, held_since),
                ).fetchone()
                if float(theirs) + float(their_held) >= person_cap_usd:
                    raise PersonCapReached(person_cap_usd)
            reservation = uuid.uuid4().hex
            conn.execute(
                "INSERT INTO model_reservations (id, at, person, cost_usd) VALUES (?, ?, ?, ?)",
                (reservation, moment, person, estimate_usd),
            )
            # Reservations of calls whose process died are old news.
            conn.execute("DELETE FROM model_reservations WHERE at < ?", (held_since,))
        return reservation

    def release(self, reservation: str) -> None:
        """A call that failed before it was charged gives its reservation back."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM model_reservations WHERE id = ?", (reservation,))

    def spent_in_session(self, session_id: str) -> float:
        with self._db.read() as conn:
            (total,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return float(total)

    def spent_today(self, *, now: float | None = None) -> float:
        start, end = _day(time.time() if now is None else now)
        with self._db.read() as conn:
            (total,) = conn.execute(
                "SELECT COALESCE(SUM(cost_usd), 0) FROM model_usage WHERE at >= ? AND at < ?",
                (start, end),
            ).fetchone()
        return float(total)


def _day(moment: float) -> tuple[float, float]:
    """The UTC day holding ``moment``, as [start, end) timestamps."""
    day = datetime.fromtimestamp(moment, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day.timestamp(), day.timestamp() + 86_400
