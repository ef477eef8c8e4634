"""Slack deliveries taken and not yet done, in the database every replica shares.

A delivery is taken once (its keys are recorded in ``slack_seen`` in the same
transaction) and written here with a lane: the thread for a message, the message for
a reaction. Rows of one lane run in the order they were taken, whichever replica took
them, one at a time; a row is done when it is deleted.

The process that took a row leases it and renews the lease while it lives. When a
process dies (a crash, SIGKILL, a host gone), its leases run out and another process
takes its rows over (``orphans``): an acknowledged delivery is never lost with the
process that acknowledged it. A message is stored redacted, like everything Thoth
stores, so a message taken over is answered from its redacted text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.slack.duplicate_deliveries import record_first_time
from layers.shared.storage.database import Database

Clock = Callable[[], float]


@dataclass(frozen=True)
class InboxEntry:
    id: int
    lane: str
    kind: str
    payload: dict[str, Any]


class SlackInbox:
    def __init__(self, db: Database, *, owner: str, lease_s: float, clock: Clock = time.time):
        self._db = db
        self._owner = owner
        self._lease_s = lease_s
        self._clock = clock

    @property
    def lease_s(self) -> float:
        return self._lease_s

    def take(
        self, keys: Sequence[str], *, lane: str, kind: str, payload: dict[str, Any]
    ) -> InboxEntry | None:
        """Record a delivery under its lane, leased to this process; None when one of
        ``keys`` was taken before (a retry of it, on this replica or another)."""
        now = self._clock()
        text = json.dumps(payload, sort_keys=True)
        with self._db.write() as conn:
            if not record_first_time(conn, keys, now):
                return None
            row = conn.execute(
                "INSERT INTO slack_inbox (lane, kind, payload, received_at, owner, lease_until)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (lane, kind, text, now, self._owner, now + self._lease_s),
            ).fetchone()
        return InboxEntry(int(row[0]), lane, kind, payload)

    def is_next(self, entry: InboxEntry) -> bool:
        """Whether every row taken before this one in its lane is done."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT MIN(id) FROM slack_inbox WHERE lane = ?", (entry.lane,)
            ).fetchone()
        return row[0] is None or int(row[0]) >= entry.id

    def done(self, entry: InboxEntry) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM slack_inbox WHERE id = ?", (entry.id,))

    def keeps(self, entry: InboxEntry) -> bool:
        """Renew this process's lease on ``entry``; False when another process took it
        over meanwhile (its lease ran out while the database was away) or it is done."""
        with self._db.write() as conn:
            return conn.execute(
                "UPDATE slack_inbox SET lease_until = ? WHERE id = ? AND owner = ?",
                (self._clock() + self._lease_s, entry.id, self._owner),
            ).rowcount == 1

    def renew(self, running: Collection[int]) -> int:
        """Extend this process's lease on the rows it is running; returns how many.

        Only those: a row this process took but is not running (its ``take`` committed and
        the answer was lost with the connection, as in a database restart) runs out and is
        taken over like a dead process's, rather than held here for good.
        """
        if not running:
            return 0
        now = self._clock()
        marks = ", ".join("?" for _ in running)
        with self._db.write() as conn:
            return conn.execute(
                f"UPDATE slack_inbox SET lease_until = ? WHERE owner = ? AND id IN ({marks})",
                (now + self._lease_s, self._owner, *running),
            ).rowcount

    def orphans(self) -> list[InboxEntry]:
        """Take over the rows whose lease ran out (their process died), oldest first."""
        now = self._clock()
        with self._db.write() as conn:
            rows = conn.execute(
                "UPDATE slack_inbox SET owner = ?, lease_until = ? WHERE lease_until < ?"
                " RETURNING id, lane, kind, payload",
                (self._owner, now + self._lease_s, now),
            ).fetchall()
        entries = [InboxEntry(int(r[0]), str(r[1]), str(r[2]), json.loads(r[3])) for r in rows]
        return sorted(entries, key=lambda entry: entry.id)

    def waiting(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM slack_inbox").fetchone()[0])
