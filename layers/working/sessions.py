"""Sessions: one conversation each, named by its transport's key.

A Slack thread's key is its (team, channel, thread); a `thoth chat` run's key is
its own id. Only one open session holds a key; after ``/done`` (or the idle
timeout) the same thread starts a new session.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from layers.shared.errors import BadInput
from layers.shared.places import Place
from layers.shared.redaction import redact
from layers.shared.storage.batches import delete_in
from layers.shared.storage.database import Database

# What may start a session id (a uuid): no LIKE wildcard can pass.
SESSION_ID_START = re.compile(r"[0-9a-fA-F-]{1,36}")


@dataclass(frozen=True)
class Session:
    id: str
    key: str
    place: Place
    started_at: float
    last_turn_at: float
    ended_at: float | None = None

    @property
    def ended(self) -> bool:
        return self.ended_at is not None


@dataclass(frozen=True)
class LastContext:
    """A turn's context blocks, as the model read them, and when they were assembled."""

    assembled_at: float
    blocks: list[tuple[str, str]]


_COLUMNS = "id, key, team, channel, channel_type, thread_ts, started_at, last_turn_at, ended_at"


class SessionStore:
    """Opens, finds, touches and ends sessions in the database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def open(self, key: str, place: Place, *, now: float | None = None) -> Session:
        """The open session holding ``key``, or a new one started now."""
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE key = ? AND ended_at IS NULL", (key,)
            ).fetchone()
            if row is not None:
                # A turn is starting: the idle sweep must not end the session under it.
                conn.execute(
                    "UPDATE sessions SET last_turn_at = ? WHERE id = ?", (moment, row[0])
                )
                return _session(row, place.channel_name)
            session = Session(str(uuid.uuid4()), key, place, moment, moment)
            conn.execute(
                f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    session.id,
                    key,
                    place.team,
                    place.channel,
                    place.channel_type,
                    place.thread_ts,
                    moment,
                    moment,
                ),
            )
        return session

    def find_open(self, key: str) -> Session | None:
        """The open session holding ``key``, if there is one (nothing is created)."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE key = ? AND ended_at IS NULL", (key,)
            ).fetchone()
        return None if row is None else _session(row, None)

    def latest_open_with_prefix(self, prefix: str) -> Session | None:
        """The most recently active open session whose key starts with ``prefix``."""
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE ended_at IS NULL"
                " AND substr(key, 1, ?) = ? ORDER BY last_turn_at DESC LIMIT 1",
                (len(prefix), prefix),
            ).fetchone()
        return None if row is None else _session(row, None)

    def idle_since(self, cutoff: float) -> list[Session]:
        """Open sessions whose last turn was before ``cutoff``."""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE ended_at IS NULL AND last_turn_at < ?",
                (cutoff,),
            ).fetchall()
        return [_session(row, None) for row in rows]

    def get(self, session_id: str) -> Session | None:
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else _session(row, None)

    def find(self, id_or_prefix: str) -> Session:
        """The session with this id, or the one whose id starts with it (the 8 characters
        ``thoth sessions`` and MEMORY.md show); a miss or a prefix of several is refused."""
        session = self.get(id_or_prefix)
        if session is not None:
            return session
        if not SESSION_ID_START.fullmatch(id_or_prefix):
            raise BadInput(f"no session {id_or_prefix!r}: `thoth sessions` lists them")
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id LIKE ? ORDER BY id LIMIT 3",
                (id_or_prefix + "%",),
            ).fetchall()
        if not rows:
            raise BadInput(f"no session {id_or_prefix!r}: `thoth sessions` lists them")
        if len(rows) > 1:
            shown = ", ".join(str(row[0])[: len(id_or_prefix) + 4] for row in rows[:2])
            raise BadInput(f"{id_or_prefix!r} starts more than one session ({shown}, …):"
                           " give more of the id")
        return _session(rows[0], None)

    def dm_sessions_of(self, team: str, user: str) -> list[str]:
        """The ids of ``user``'s DM sessions with Thoth in ``team``: they spoke there,
        and nobody else did (a terminal session two logins resumed is not one's alone)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT s.id FROM sessions s JOIN transcript_turns t"
                " ON t.session_id = s.id WHERE s.team = ? AND s.channel_type = 'im'"
                ' AND t."user" = ? AND NOT EXISTS (SELECT 1 FROM transcript_turns o'
                ' WHERE o.session_id = s.id AND o."user" <> ?)',
                (team, user, user)).fetchall()
        return sorted(str(row[0]) for row in rows)

    def delete(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions with their transcripts (cascade); how many."""
        with self._db.write() as conn:
            return delete_in(conn, "sessions", "id", session_ids)

    def keep_context(self, session_id: str, blocks: Sequence[tuple[str, str]],
                     at: float) -> None:
        """The context blocks (name, text) of the session's latest turn, redacted, in
        place of the last turn's."""
        kept = json.dumps([[name, redact(text)] for name, text in blocks], ensure_ascii=False)
        with self._db.write(durable=False) as conn:
            conn.execute(
                "INSERT INTO session_contexts (session_id, assembled_at, blocks)"
                " VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " assembled_at = excluded.assembled_at, blocks = excluded.blocks",
                (session_id, at, kept))

    def context_of(self, session_id: str) -> LastContext | None:
        """What the model saw at the session's latest turn (None: no turn kept one)."""
        with self._db.read() as conn:
            row = conn.execute("SELECT assembled_at, blocks FROM session_contexts"
                               " WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        return LastContext(float(row[0]), [(str(name), str(text))
                                           for name, text in json.loads(str(row[1]))])

    def count_open(self) -> int:
        with self._db.read() as conn:
            row = conn.execute("SELECT count(*) FROM sessions WHERE ended_at IS NULL").fetchone()
        return int(row[0]) if row else 0

    def listed(self, *, open_only: bool = False, limit: int = 50) -> list[Session]:
        """The sessions with the latest turns first."""
        where = " WHERE ended_at IS NULL" if open_only else ""
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions{where} ORDER BY last_turn_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [_session(row, None) for row in rows]

    def resume(self, id_or_prefix: str) -> Session:
        """An existing open session by id or its unique start (``thoth chat --session``)."""
        session = self.find(id_or_prefix)
        session_id = session.id
        if session.ended:
            raise BadInput(
                f"session {session_id!r} has ended and been handed to reflection;"
                " start a new one without --session"
            )
        return session

    def touch(self, session_id: str, *, now: float | None = None) -> None:
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            conn.execute("UPDATE sessions SET last_turn_at = ? WHERE id = ?", (moment, session_id))

    def end(self, session_id: str, *, now: float | None = None) -> bool:
        """End an open session; False if it had ended already (ending is done once)."""
        moment = time.time() if now is None else now
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
                (moment, session_id),
            )
        return cursor.rowcount == 1


def _session(row: sqlite3.Row | tuple[object, ...], channel_name: str | None) -> Session:
    sid, key, team, channel, channel_type, thread_ts, started, last, ended = row
    place = Place(
        str(team),
        str(channel),
        channel_type,  # type: ignore[arg-type]  # the CHECK constraint keeps it valid
        None if thread_ts is None else str(thread_ts),
        channel_name,
    )
    return Session(
        str(sid),
        str(key),
        place,
        float(started),  # type: ignore[arg-type]
        float(last),  # type: ignore[arg-type]
        None if ended is None else float(ended),  # type: ignore[arg-type]
    )
