"""Who changed what Thoth keeps, when, and from where: one row a change, never edited.

An entry's words are redacted like everything stored; a detail names what changed (a
note's id, a fact's id, a skill's name), never the memory's own text, so forgetting a
memory leaves no copy of it here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from layers.shared.redaction import redact
from layers.shared.storage.database import Database

_COLUMNS = "id, at, actor, action, target, detail, origin"
# A page of the log, newest first.
PAGE = 100


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: float
    # Who: "operator" (the console's one-time sign-in), a Slack person ("slack:U1",
    # ``slack_actor``), or the login name a command ran under (origin "cli").
    actor: str
    # What kind of change: "login", "episode.forget", "note.propose", "note.keep",
    # "note.reject", "note.withdraw", "skill.approve", "skill.reject", "skill.remove",
    # "brain.revert", "fact.add", "fact.forget", "person.forget", "episodes.import",
    # "episodes.purge".
    action: str
    # What it was done to: "note:ab12…", "episode:…".
    target: str
    detail: str
    # From where: "console 127.0.0.1", "slack", "cli".
    origin: str


class AuditLog:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def record(self, *, actor: str, action: str, target: str, origin: str,
               detail: str = "", durable: bool = True) -> AuditEntry:
        """``durable=False`` for a read's line: see ``Database.write``."""
        at = self._clock()
        values = (at, redact(actor), action, redact(target), redact(detail), redact(origin))
        with self._db.write(durable=durable) as conn:
            row = conn.execute(
                "INSERT INTO audit_log (at, actor, action, target, detail, origin)"
                f" VALUES (?, ?, ?, ?, ?, ?) RETURNING {_COLUMNS}",
                values,
            ).fetchone()
        return _entry(row)

    def entries(self, *, action: str | None = None, actor: str | None = None,
                before_id: int | None = None, limit: int = PAGE) -> list[AuditEntry]:
        """Newest first; ``action`` matches a prefix ("note" finds "note.keep")."""
        where: list[str] = ["1 = 1"]
        values: list[object] = []
        if action:
            where.append("(action = ? OR action LIKE ?)")
            values += [action, f"{action}.%"]
        if actor:
            where.append("actor = ?")
            values.append(actor)
        if before_id is not None:
            where.append("id < ?")
            values.append(before_id)
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM audit_log WHERE {' AND '.join(where)}"
                " ORDER BY id DESC LIMIT ?",
                (*values, limit),
            ).fetchall()
        return [_entry(row) for row in rows]


def _entry(row: tuple[object, ...]) -> AuditEntry:
    entry_id, at, actor, action, target, detail, origin = row
    return AuditEntry(int(str(entry_id)), float(str(at)), str(actor), str(action),
                      str(target), str(detail), str(origin))
