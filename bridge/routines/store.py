"""Routines kept in the database, so that any replica or worker may run one, and each
run is begun once.

A run is claimed as the other queues are: the process that takes a due routine holds it
for ``lease_s`` (``claimed_by``, ``claimed_until``) and, before it starts, writes the run's
row, whose key is the routine and its due time: a second process that claims the same
due time (the first one died holding it) finds the row and does not run it again. So a
run is never doubled; one whose process died mid-run is recorded as failed by the next
claimer (``interrupted``), and the schedule goes on.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from layers.shared.places import Place
from layers.shared.storage.database import Database

State = Literal["active", "paused"]
# Why a routine whose creator Slack deactivated is paused (it is never resumed).
CREATOR_DEACTIVATED = "its creator was deactivated"
Outcome = Literal["running", "posted", "failed", "missed"]
_COLUMNS = ("id, team, creator, creator_name, channel, channel_type, thread_ts, channel_name,"
            " instruction, cron, zone, state, paused_why, created_at, next_run_at,"
            " last_run_at")


@dataclass(frozen=True)
class Routine:
    id: str
    place: Place
    creator: str
    creator_name: str | None
    instruction: str
    cron: str
    zone: str
    state: State = "active"
    paused_why: str | None = None
    created_at: float = 0.0
    next_run_at: float | None = None
    last_run_at: float | None = None

    @property
    def team(self) -> str:
        return self.place.team


@dataclass(frozen=True)
class Run:
    routine_id: str
    due_at: float
    started_at: float
    finished_at: float | None
    outcome: Outcome
    detail: str | None
    posted_ts: str | None


class RoutineStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, place: Place, creator: str, creator_name: str | None, instruction: str,
               cron: str, zone: str, next_run_at: float | None, *,
               made_from: str | None = None) -> Routine | None:
        """The routine made; None when ``made_from`` (its card) made one already."""
        made = Routine(uuid.uuid4().hex[:12], place, creator, creator_name, instruction, cron,
                       zone, created_at=time.time(), next_run_at=next_run_at)
        with self._db.write() as conn:
            cursor = conn.execute(
                f"INSERT INTO routines ({_COLUMNS}, made_from) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (made.id, place.team, creator, creator_name, place.channel, place.channel_type,
                 place.thread_ts, place.channel_name, instruction, cron, zone, made.state,
                 None, made.created_at, next_run_at, None, made_from))
        return made if cursor.rowcount == 1 else None

    def get(self, routine_id: str) -> Routine | None:
        with self._db.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM routines WHERE id = ?",
                               (routine_id,)).fetchone()
        return None if row is None else _routine(row)

    def of_person(self, team: str, creator: str) -> list[Routine]:
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM routines WHERE team = ? AND creator = ?"
                                " ORDER BY created_at", (team, creator)).fetchall()
        return [_routine(row) for row in rows]

    def count_of(self, team: str, creator: str) -> int:
        with self._db.read() as conn:
            row = conn.execute("SELECT COUNT(*) FROM routines WHERE team = ? AND creator = ?",
                               (team, creator)).fetchone()
        return int(row[0])

    def listed(self) -> list[Routine]:
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM routines ORDER BY team, creator,"
                                " created_at").fetchall()
        return [_routine(row) for row in rows]

    def pause(self, routine_id: str, why: str) -> bool:
        with self._db.write() as conn:
            cursor = conn.execute("UPDATE routines SET state = 'paused', paused_why = ?"
                                  " WHERE id = ? AND state = 'active'", (why, routine_id))
        return cursor.rowcount == 1

    def resume(self, routine_id: str, next_run_at: float | None) -> bool:
        """Active again, from its next time after now (runs missed while paused are not
        made up)."""
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE routines SET state = 'active', paused_why = NULL, next_run_at = ?"
                " WHERE id = ? AND state = 'paused'", (next_run_at, routine_id))
        return cursor.rowcount == 1

    def pause_where(self, *, why: str, team: str | None = None, creator: str | None = None,
                    channel: str | None = None) -> list[str]:
        """Pause every active routine of a creator, or posting to a channel; their ids."""
        clauses = ["state = 'active'"]
        values: list[Any] = []
        for column, value in (("team", team), ("creator", creator), ("channel", channel)):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        where = " AND ".join(clauses)
        with self._db.write() as conn:
            ids = [str(row[0]) for row in conn.execute(
                f"SELECT id FROM routines WHERE {where}", values).fetchall()]
            conn.execute(f"UPDATE routines SET state = 'paused', paused_why = ? WHERE {where}",
                         [why, *values])
        return ids

    def delete(self, routine_id: str) -> bool:
        with self._db.write() as conn:
            conn.execute("DELETE FROM routine_runs WHERE routine_id = ?", (routine_id,))
            cursor = conn.execute("DELETE FROM routines WHERE id = ?", (routine_id,))
        return cursor.rowcount == 1

    def move(self, routine_id: str, next_run_at: float | None) -> None:
        """Run it at ``next_run_at`` (now: "run now")."""
        with self._db.write() as conn:
            conn.execute("UPDATE routines SET next_run_at = ? WHERE id = ?",
                         (next_run_at, routine_id))

    # -- running ---------------------------------------------------------------------

    def claim_due(self, now: float, owner: str, lease_s: float, limit: int) -> list[Routine]:
        """Active routines due by ``now`` that no process holds, held by ``owner`` for
        ``lease_s``: each claimed by one process only. Candidates lost to another process
        looking at once are passed over for the next ones, so two replicas share a burst
        rather than one taking it all."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM routines WHERE state = 'active' AND next_run_at <= ?"
                " AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY next_run_at"
                " LIMIT ?", (now, now, limit * 4)).fetchall()
        claimed: list[Routine] = []
        for row in rows:
            if len(claimed) >= limit:
                break
            found = _routine(row)
            with self._db.write() as conn:
                cursor = conn.execute(
                    "UPDATE routines SET claimed_by = ?, claimed_until = ? WHERE id = ?"
                    " AND state = 'active' AND next_run_at = ?"
                    " AND (claimed_until IS NULL OR claimed_until < ?)",
                    (owner, now + lease_s, found.id, found.next_run_at, now))
            if cursor.rowcount == 1:
                claimed.append(found)
        return claimed

    def begin_run(self, routine_id: str, due_at: float, owner: str) -> bool:
        """Write the run's row; False when it was begun already (by a process that died
        holding it: that run is then recorded as interrupted, not run again)."""
        now = time.time()
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO routine_runs (routine_id, due_at, started_at, outcome, run_by)"
                " VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO NOTHING",
                (routine_id, due_at, now, owner))
            if cursor.rowcount == 1:
                return True
            conn.execute(
                "UPDATE routine_runs SET outcome = 'failed', finished_at = ?,"
                " detail = 'interrupted: the process running it stopped'"
                " WHERE routine_id = ? AND due_at = ? AND outcome = 'running'",
                (now, routine_id, due_at))
        return False

    def end_run(self, routine_id: str, due_at: float, outcome: Outcome, detail: str | None,
                posted_ts: str | None = None) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO routine_runs (routine_id, due_at, started_at, finished_at,"
                " outcome, detail, posted_ts) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (routine_id, due_at) DO UPDATE SET finished_at ="
                " excluded.finished_at, outcome = excluded.outcome, detail = excluded.detail,"
                " posted_ts = excluded.posted_ts",
                (routine_id, due_at, time.time(), time.time(), outcome, detail, posted_ts))

    def release(self, routine_id: str, owner: str, next_run_at: float | None,
                ran_at: float | None) -> None:
        """Let the routine go, to run next at ``next_run_at``."""
        with self._db.write() as conn:
            conn.execute(
                "UPDATE routines SET claimed_by = NULL, claimed_until = NULL, next_run_at = ?,"
                " last_run_at = COALESCE(?, last_run_at) WHERE id = ? AND claimed_by = ?",
                (next_run_at, ran_at, routine_id, owner))

    def runs_of(self, routine_id: str, limit: int = 10) -> list[Run]:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT routine_id, due_at, started_at, finished_at, outcome, detail, posted_ts"
                " FROM routine_runs WHERE routine_id = ? ORDER BY due_at DESC LIMIT ?",
                (routine_id, limit)).fetchall()
        return [Run(str(r[0]), float(r[1]), float(r[2]),
                    None if r[3] is None else float(r[3]), r[4], r[5], r[6]) for r in rows]


def _routine(row: Any) -> Routine:
    place = Place(str(row[1]), str(row[4]), row[5], row[6], row[7])
    return Routine(str(row[0]), place, str(row[2]), row[3], str(row[8]), str(row[9]),
                   str(row[10]), row[11], row[12], float(row[13]),
                   None if row[14] is None else float(row[14]),
                   None if row[15] is None else float(row[15]))


