"""Reflection state per session: pending -> running -> done | failed, with attempts.

A run that died (a killed process) stays "running"; once it is older than the
run timeout it may be claimed again. Each fan-out writer records its completion,
so a retry applies only the writers that had not finished.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from layers.shared.redaction import redact
from layers.shared.storage.database import Database
from reflection.report import Reflection

MAX_ATTEMPTS = 5
# A failed run waits 5, 10, 20, 40 … minutes before the next try: an outage or a
# cost cap must not use up every attempt within minutes.
RETRY_BASE_S = 300
Clock = Callable[[], float]


# 2 ** attempts, capped at 2 ** 8, in SQL both engines read (SQLite has no LEAST).
_BACKOFF_FACTOR = "(1 << CASE WHEN attempts < 8 THEN attempts ELSE 8 END)"
# Due a run: attempts left, and pending, failed long enough ago, or running so long
# that its process must have died. Parameters: max attempts, now, retry base, now -
# run timeout.
_DUE = (
    "attempts < ? AND (state = 'pending'"
    f" OR (state = 'failed' AND finished_at < ? - ? * {_BACKOFF_FACTOR} / 2)"
    " OR (state = 'running' AND started_at < ?))"
)


@dataclass(frozen=True)
class Claimed:
    session_id: str
    # Whether the run posts a closing summary (the session ended with `/done`).
    summary: bool


@dataclass(frozen=True)
class ReflectionRow:
    session_id: str
    state: str
    attempts: int
    report: Reflection | None
    error: str | None
    finished_at: float | None = None


class ReflectionState:
    def __init__(self, db: Database, *, run_timeout_s: float, clock: Clock = time.time) -> None:
        self._db = db
        self._run_timeout_s = run_timeout_s
        self._clock = clock

    def queue(self, session_id: str, *, summary: bool = False) -> bool:
        """Mark the session for reflection; False if it already was (it is reflected once).
        ``summary``: the run posts a closing summary (a `/done`), whoever runs it."""
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO reflections (session_id, state, queued_at, summary)"
                " VALUES (?, 'pending', ?, ?) ON CONFLICT (session_id) DO NOTHING",
                (session_id, self._clock(), int(summary)),
            )
        return cursor.rowcount == 1

    def claim_next(self) -> Claimed | None:
        """Start the run of the reflection due longest (for a worker); None when none is.
        Workers claiming at once each get another one (SKIP LOCKED on PostgreSQL)."""
        now = self._clock()
        with self._db.claim() as conn:
            row = conn.execute(
                "UPDATE reflections SET state = 'running', attempts = attempts + 1,"
                " started_at = ?, error = NULL WHERE session_id = ("
                f" SELECT session_id FROM reflections WHERE {_DUE} ORDER BY queued_at LIMIT 1"
                f"{self._db.skip_locked}) RETURNING session_id, summary",
                (now, MAX_ATTEMPTS, now, RETRY_BASE_S, now - self._run_timeout_s),
            ).fetchone()
        return None if row is None else Claimed(str(row[0]), bool(row[1]))

    def claimed(self, session_id: str) -> ReflectionRow | None:
        """The run a worker claimed for this process to do (``claim_next``); None if
        the session's reflection is not running."""
        row = self.get(session_id)
        return row if row is not None and row.state == "running" else None

    def claim(self, session_id: str) -> ReflectionRow | None:
        """Start a run if the session is due one (pending, failed, or a dead run)."""
        now = self._clock()
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE reflections SET state = 'running', attempts = attempts + 1,"
                f" started_at = ?, error = NULL WHERE session_id = ? AND {_DUE}",
                (now, session_id, MAX_ATTEMPTS, now, RETRY_BASE_S, now - self._run_timeout_s),
            )
        return self.get(session_id) if cursor.rowcount == 1 else None

    def due(self) -> list[str]:
        """Sessions whose reflection should run now (for the retry sweep)."""
        now = self._clock()
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT session_id FROM reflections WHERE {_DUE} ORDER BY queued_at",
                (MAX_ATTEMPTS, now, RETRY_BASE_S, now - self._run_timeout_s),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def save_report(self, session_id: str, report: Reflection, raw: str | None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE reflections SET report = ?, raw_output = ? WHERE session_id = ?",
                (report.model_dump_json(), raw, session_id),
            )

    def save_raw(self, session_id: str, raw: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "UPDATE reflections SET raw_output = ? WHERE session_id = ?", (raw, session_id)
            )

    def postpone(self, session_id: str, *, reason: str) -> None:
        """Give the attempt back (a cost cap is no failure) and wait like a failed run."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE reflections SET state = 'failed',"
                " attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,"
                " finished_at = ?, error = ? WHERE session_id = ?",
                (self._clock(), reason, session_id),
            )

    def finish(self, session_id: str, *, error: str | None) -> None:
        # An error may quote what the model wrote (a report that did not parse).
        error = None if error is None else redact(error)
        with self._db.write() as conn:
            conn.execute(
                "UPDATE reflections SET state = ?, finished_at = ?, error = ? WHERE session_id = ?",
                ("failed" if error else "done", self._clock(), error, session_id),
            )

    def get(self, session_id: str) -> ReflectionRow | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT session_id, state, attempts, report, error, finished_at FROM reflections"
                " WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return None if row is None else _row(row)

    def finished(self, limit: int = 50) -> list[ReflectionRow]:
        """The newest reflections that ran to an end, newest first: done, or failed (to be
        tried again, postponed by a cost cap, or given up after its attempts)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT session_id, state, attempts, report, error, finished_at FROM reflections"
                " WHERE state IN ('done', 'failed') ORDER BY finished_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [_row(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """How many sessions are in each state (for `thoth doctor`)."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT state, COUNT(*) FROM reflections GROUP BY state")
            return {str(state): int(count) for state, count in rows}

    def gave_up(self) -> list[str]:
        """Sessions whose reflection failed every attempt."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT session_id FROM reflections WHERE state = 'failed' AND attempts >= ?",
                (MAX_ATTEMPTS,),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def written(self, session_id: str) -> set[str]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT writer FROM reflection_writes WHERE session_id = ?", (session_id,)
            ).fetchall()
        return {str(row[0]) for row in rows}

    def mark_written(self, session_id: str, writer: str, detail: str | None = None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO reflection_writes (session_id, writer, done_at, detail)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, writer) DO NOTHING",
                (session_id, writer, self._clock(), detail),
            )


def _row(row: Sequence[Any]) -> ReflectionRow:
    report = Reflection.model_validate(json.loads(row[3])) if row[3] else None
    return ReflectionRow(str(row[0]), str(row[1]), int(row[2]), report, row[4],
                         None if row[5] is None else float(row[5]))
