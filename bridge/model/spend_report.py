"""What the model cost, summed per UTC day, per person and per channel, over a window.

Read from ``model_usage`` (``cost_ledger.py`` writes it); a call's channel is its
session's. Reflection's calls have no person and count under "(reflection)".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from layers.shared.storage.database import Database

DAY_S = 86_400


@dataclass(frozen=True)
class SpendLine:
    label: str
    calls: int
    cost_usd: float


@dataclass(frozen=True)
class SpendReport:
    days: list[SpendLine]
    people: list[SpendLine]
    channels: list[SpendLine]

    @property
    def total_usd(self) -> float:
        return sum(line.cost_usd for line in self.days)


class SpendReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    def report(self, *, days: int = 30, now: float | None = None) -> SpendReport:
        moment = time.time() if now is None else now
        since = (moment // DAY_S - (days - 1)) * DAY_S  # the start of the oldest UTC day
        with self._db.read() as conn:
            # Per day here: the engines round a float to an integer differently (PostgreSQL
            # to the nearest, SQLite toward zero), and a call a moment before midnight
            # belongs to its own day.
            calls = conn.execute(
                "SELECT at, cost_usd FROM model_usage WHERE at >= ?", (since,)
            ).fetchall()
            by_person = conn.execute(
                "SELECT COALESCE(person, '(reflection)'), COUNT(*), SUM(cost_usd)"
                " FROM model_usage WHERE at >= ? GROUP BY 1 ORDER BY 3 DESC LIMIT 50",
                (since,),
            ).fetchall()
            by_channel = conn.execute(
                "SELECT COALESCE(s.team || ' ' || s.channel, '(no session)'), COUNT(*),"
                " SUM(u.cost_usd) FROM model_usage u LEFT JOIN sessions s"
                " ON s.id = u.session_id WHERE u.at >= ? GROUP BY 1 ORDER BY 3 DESC LIMIT 50",
                (since,),
            ).fetchall()
        per_day: dict[int, tuple[int, float]] = {}
        for at, cost in calls:
            day = int(float(at) // DAY_S)
            so_far = per_day.get(day, (0, 0.0))
            per_day[day] = (so_far[0] + 1, so_far[1] + float(cost))
        return SpendReport(
            days=[SpendLine(_day(day), calls, cost)
                  for day, (calls, cost) in sorted(per_day.items(), reverse=True)],
            people=[_line(row) for row in by_person],
            channels=[_line(row) for row in by_channel],
        )


def _day(day_number: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(day_number * DAY_S))


def _line(row: tuple[object, ...]) -> SpendLine:
    label, calls, cost = row
    return SpendLine(str(label), int(str(calls)), float(str(cost)))
