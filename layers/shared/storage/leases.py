"""Named leases: a job that one process should run at a time, among processes sharing
one database (several `thoth serve` replicas and workers on PostgreSQL).

A lease is taken for a time and given back when the job is done; a process that dies
holding one loses it when the time runs out. A lease saves doubled work (two replicas
sweeping idle sessions at once); what must never happen twice is guarded by its own
claim as well (a reflection's ``claim``, a queued job's).
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable

from layers.shared.storage.database import Database

Clock = Callable[[], float]


def process_name() -> str:
    """This process among others: host and pid, and a random part (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Leases:
    def __init__(self, db: Database, *, owner: str, clock: Clock = time.time) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock

    @property
    def owner(self) -> str:
        return self._owner

    def take(self, name: str, lease_s: float) -> bool:
        """Hold ``name`` for ``lease_s`` seconds; False while another process holds it.
        Taking a lease this process holds already extends it."""
        now = self._clock()
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO leases (name, owner, held_until) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,"
                " held_until = excluded.held_until WHERE leases.owner = excluded.owner"
                " OR leases.held_until < ?",
                (name, self._owner, now + lease_s, now),
            )
        return cursor.rowcount == 1

    def give_back(self, name: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM leases WHERE name = ? AND owner = ?", (name, self._owner)
            )

    def holder(self, name: str) -> str | None:
        """Who holds ``name`` now (for `thoth doctor`)."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT owner FROM leases WHERE name = ? AND held_until >= ?", (name, self._clock())
            ).fetchone()
        return None if row is None else str(row[0])
