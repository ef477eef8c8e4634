""""Always allow": a person's standing yes for one tool of one server, in their turns."""

from __future__ import annotations

import time
from dataclasses import dataclass

from layers.shared.storage.database import Database


@dataclass(frozen=True)
class Grant:
    team: str
    user: str
    server: str
    tool: str
    granted_at: float


class Grants:
    def __init__(self, db: Database) -> None:
        self._db = db

    def allows(self, team: str, user: str, server: str, tool: str) -> bool:
        with self._db.read() as conn:
            row = conn.execute(
                'SELECT 1 FROM tool_grants WHERE team = ? AND "user" = ? AND server = ?'
                " AND tool = ?", (team, user, server, tool)).fetchone()
        return row is not None

    def grant(self, team: str, user: str, server: str, tool: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                'INSERT INTO tool_grants (team, "user", server, tool, granted_at)'
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (team, user, server, tool, time.time()))

    def revoke(self, team: str, user: str, server: str, tool: str) -> bool:
        with self._db.write() as conn:
            cursor = conn.execute(
                'DELETE FROM tool_grants WHERE team = ? AND "user" = ? AND server = ?'
                " AND tool = ?", (team, user, server, tool))
        return cursor.rowcount > 0

    def of_person(self, team: str, user: str) -> list[Grant]:
        with self._db.read() as conn:
            rows = conn.execute(
                'SELECT team, "user", server, tool, granted_at FROM tool_grants'
                ' WHERE team = ? AND "user" = ? ORDER BY server, tool', (team, user)).fetchall()
        return [Grant(str(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4])) for r in rows]
