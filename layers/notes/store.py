"""Memory notes in the database: proposed, kept, rejected or replaced, each with its place.

What reaches a prompt is read here, under the episodes' visibility rule in SQL
(``layers/shared/places/visibility.py``): a note said in a DM only in a DM with the same
person, in a private channel only there, in a public channel anywhere in that workspace.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from layers.shared.places import Place, Viewer
from layers.shared.places.visibility import sql_predicate
from layers.shared.redaction import redact
from layers.shared.storage.batches import delete_in
from layers.shared.storage.database import Database

# A note is one line of standing context, not a document.
MAX_NOTE_CHARS = 300
# The newest kept notes a prompt carries: enough for a team's standing facts, and a bound
# on what any number of notes can add to every turn.
PROMPT_NOTES = 20
STATUSES = ("proposed", "kept", "rejected", "replaced")

_COLUMNS = ('id, text, team, channel, channel_type, thread_ts, "user", author_name, source,'
            " session_id, status, decided_by, decided_at, replaced_by, record_line, created_at")


@dataclass(frozen=True)
class Note:
    id: str
    text: str
    place: Place
    # Who the note came from: the person who asked for it (🧠, "remember …"), or None for
    # a note reflection drew from a whole conversation.
    user: str | None
    author_name: str | None
    source: str  # "🧠 reaction", "reflection on session …"
    session_id: str | None
    status: str
    decided_by: str | None = None
    decided_at: float | None = None
    replaced_by: str | None = None
    # The exact MEMORY.md line that records it while kept.
    record_line: str | None = None
    created_at: float = 0.0


class NoteStore:
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    def propose(
        self, text: str, place: Place, *, user: str | None, author_name: str | None,
        source: str, session_id: str | None,
    ) -> Note:
        """A new proposed note (redacted, one line); the same words already proposed or
        kept in the same place are that note, not a second one."""
        said = " ".join(redact(text).split())[:MAX_NOTE_CHARS]
        with self._db.write() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes WHERE text = ? AND team = ?"
                " AND channel = ? AND status IN ('proposed', 'kept')",
                (said, place.team, place.channel),
            ).fetchone()
            if row is not None:
                return _note(row)
            note = Note(uuid.uuid4().hex[:12], said, place, user, author_name, source,
                        session_id, "proposed", created_at=self._clock())
            conn.execute(
                f"INSERT INTO memory_notes ({_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (note.id, note.text, place.team, place.channel, place.channel_type,
                 place.thread_ts, user, author_name, source, session_id, note.status, None,
                 None, None, None, note.created_at),
            )
        return note

    def get(self, note_id: str) -> Note | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes WHERE id = ?", (note_id,)
            ).fetchone()
        return None if row is None else _note(row)

    def decide(
        self, note_id: str, status: str, *, by: str, was: tuple[str, ...] = ("proposed",),
        record_line: str | None = None, replaced_by: str | None = None,
    ) -> Note | None:
        """Set a note's status (who decided, when) if it is still one of ``was``: a note
        decided meanwhile (a 🗑️ during a ✅) keeps that decision. None: no such note."""
        if status not in STATUSES:
            raise ValueError(f"unknown note status {status!r}")
        marks = ", ".join("?" for _ in was)
        with self._db.write() as conn:
            conn.execute(
                "UPDATE memory_notes SET status = ?, decided_by = ?, decided_at = ?,"
                " record_line = COALESCE(?, record_line), replaced_by = ?"
                f" WHERE id = ? AND status IN ({marks})",
                (status, by, self._clock(), record_line, replaced_by, note_id, *was),
            )
        return self.get(note_id)

    def of_session(self, session_id: str) -> list[Note]:
        """The notes proposed from one session (its reflection's, and 🧠 in it), oldest
        first."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes WHERE session_id = ?"
                " ORDER BY created_at", (session_id,)).fetchall()
        return [_note(row) for row in rows]

    def of_person(self, team: str, user: str, session_ids: Sequence[str]) -> list[Note]:
        """Every note ``user`` asked for in ``team``, and every note drawn from
        ``session_ids`` (their DMs), whatever its status."""
        marks = ",".join("?" * len(session_ids)) or "NULL"
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes"
                f' WHERE (team = ? AND "user" = ?) OR session_id IN ({marks})',
                (team, user, *session_ids)).fetchall()
        return [_note(row) for row in rows]

    def kept_with_lines(self, lines: Sequence[str]) -> list[Note]:
        """The kept notes whose MEMORY.md line is one of ``lines``."""
        if not lines:
            return []
        marks = ",".join("?" * len(lines))
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes WHERE status = 'kept'"
                f" AND record_line IN ({marks})", tuple(lines)).fetchall()
        return [_note(row) for row in rows]

    def delete(self, note_ids: Sequence[str]) -> int:
        """Delete these notes, whatever their status; how many."""
        with self._db.write() as conn:
            return delete_in(conn, "memory_notes", "id", note_ids)

    def chain(self, note_id: str, *, most: int = 50) -> list[Note]:
        """Every version of a note, oldest first: the ones it replaced, itself, and the
        ones that replaced it (``most`` each way: a chain is a handful of edits)."""
        note = self.get(note_id)
        if note is None:
            return []
        older: list[Note] = []
        with self._db.read() as conn:
            newest_older = note.id
            for _ in range(most):
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memory_notes WHERE replaced_by = ?",
                    (newest_older,)).fetchone()
                if row is None:
                    break
                older.insert(0, _note(row))
                newest_older = older[0].id
        newer: list[Note] = []
        following = note.replaced_by
        while following is not None and len(newer) < most:
            found = self.get(following)
            if found is None:
                break
            newer.append(found)
            following = found.replaced_by
        return [*older, note, *newer]

    def reject_pending_of(self, session_id: str, *, by: str) -> int:
        """Reject every note still proposed from a session (its words were forgotten)."""
        with self._db.write() as conn:
            rejected = conn.execute(
                "UPDATE memory_notes SET status = 'rejected', decided_by = ?, decided_at = ?"
                " WHERE session_id = ? AND status = 'proposed'",
                (by, self._clock(), session_id),
            ).rowcount
        return int(rejected or 0)

    def kept_of_team(self, team: str) -> list[Note]:
        """The notes of one workspace (or org) kept now: their lines are in MEMORY.md."""
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM memory_notes"
                                " WHERE team = ? AND status = 'kept'", (team,)).fetchall()
        return [_note(row) for row in rows]

    def delete_team(self, team: str) -> int:
        """Delete every note of one workspace (or org), whatever its status; how many."""
        with self._db.write() as conn:
            deleted = conn.execute("DELETE FROM memory_notes WHERE team = ?", (team,)).rowcount
        return int(deleted or 0)

    def listed(self, status: str | None = None, limit: int = 200, *,
               older_than: tuple[float, str] | None = None) -> list[Note]:
        """Every note (or those of one status), newest first: the operator's view; with
        ``older_than`` (a note's time and id), those listed after it (a page on)."""
        conditions: list[str] = ["1 = 1"]
        params: list[object] = []
        if status:
            conditions.append("status = ?")
            params.append(status)
        if older_than is not None:
            conditions.append("(created_at < ? OR (created_at = ? AND id < ?))")
            params += [older_than[0], older_than[0], older_than[1]]
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memory_notes WHERE {' AND '.join(conditions)}"
                f" ORDER BY created_at DESC, id DESC LIMIT {int(limit)}",
                params,
            ).fetchall()
        return [_note(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """How many notes each status holds (every status, 0 included)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT status, COUNT(*) FROM memory_notes GROUP BY status").fetchall()
        return {**dict.fromkeys(STATUSES, 0), **{str(s): int(n) for s, n in rows}}

    def kept_for(self, viewer: Viewer, limit: int = PROMPT_NOTES) -> list[Note]:
        """The kept notes ``viewer`` may read, oldest first (the newest ``limit``)."""
        predicate, params = sql_predicate(viewer, alias="n")
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_prefixed('n.')} FROM memory_notes n"
                f" WHERE n.status = 'kept' AND {predicate}"
                " ORDER BY n.created_at DESC LIMIT :limit",
                {**params, "limit": limit},
            ).fetchall()
        return [_note(row) for row in reversed(rows)]


def _prefixed(prefix: str) -> str:
    return ", ".join(prefix + column.strip() for column in _COLUMNS.split(","))


def _note(row: tuple[object, ...]) -> Note:
    (note_id, text, team, channel, channel_type, thread_ts, user, author_name, source,
     session_id, status, decided_by, decided_at, replaced_by, record_line, created_at) = row
    return Note(
        str(note_id), str(text),
        Place(str(team), str(channel), channel_type, thread_ts),  # type: ignore[arg-type]
        None if user is None else str(user),
        None if author_name is None else str(author_name),
        str(source), None if session_id is None else str(session_id), str(status),
        None if decided_by is None else str(decided_by),
        None if decided_at is None else float(decided_at),  # type: ignore[arg-type]
        None if replaced_by is None else str(replaced_by),
        None if record_line is None else str(record_line),
        float(created_at),  # type: ignore[arg-type]
    )
