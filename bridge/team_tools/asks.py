"""Calls waiting for a person's yes, kept so that any replica can take the answer.

A call is asked once and answered once: the first click that takes it (the asker's, in
time) decides it; every later one finds it decided. It lapses after ``ASK_LIFETIME_S``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Literal

from layers.shared.places import Place
from layers.shared.storage.database import Database

# How long a call waits for its answer (the card says so).
ASK_LIFETIME_S = 30 * 60.0
State = Literal["waiting", "allowed", "denied", "expired"]
# The tool of an ask to connect a person's own account: no MCP tool is named so (names are
# letters, digits, _ - and .), so no call is ever taken for one.
CONNECT_ASK = "(connect)"
_COLUMNS = ('id, team, channel, channel_type, thread_ts, session_key, asker, asker_name,'
            ' server, tool, arguments, asked_at, expires_at, card_ts, state')


@dataclass(frozen=True)
class Ask:
    id: str
    place: Place
    session_key: str
    asker: str
    asker_name: str | None
    server: str
    tool: str
    arguments: dict[str, Any]
    asked_at: float
    expires_at: float
    card_ts: str | None = None
    state: State = "waiting"


@dataclass(frozen=True)
class Taken:
    """What a click found: the ask it took, or why it took none."""

    ask: Ask | None
    # None when taken; else "decided" (already answered), "expired", "not yours", "gone".
    refused: str | None = None


class Asks:
    def __init__(self, db: Database, *, lifetime_s: float = ASK_LIFETIME_S) -> None:
        self._db = db
        self._lifetime_s = lifetime_s

    def ask(self, place: Place, session_key: str, asker: str, asker_name: str | None,
            server: str, tool: str, arguments: dict[str, Any]) -> Ask:
        now = time.time()
        made = Ask(uuid.uuid4().hex, place, session_key, asker, asker_name, server, tool,
                   arguments, now, now + self._lifetime_s)
        with self._db.write() as conn:
            conn.execute(
                f"INSERT INTO tool_asks ({_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (made.id, place.team, place.channel, place.channel_type, place.thread_ts,
                 session_key, asker, asker_name, server, tool,
                 json.dumps(arguments, ensure_ascii=False), made.asked_at, made.expires_at,
                 None, "waiting"))
        return made

    def set_card(self, ask_id: str, card_ts: str) -> None:
        with self._db.write() as conn:
            conn.execute("UPDATE tool_asks SET card_ts = ? WHERE id = ?", (card_ts, ask_id))

    def get(self, ask_id: str) -> Ask | None:
        with self._db.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM tool_asks WHERE id = ?",
                               (ask_id,)).fetchone()
        return None if row is None else _ask(row)

    def take(self, ask_id: str, by: str, *, allowed: bool, founder: bool = False,
             now: float | None = None) -> Taken:
        """Decide the ask, once: the asker may allow or deny it, a founder may deny it."""
        at = time.time() if now is None else now
        found = self.get(ask_id)
        if found is None:
            return Taken(None, "gone")
        if found.state != "waiting":
            return Taken(found, "decided")
        if found.expires_at <= at:
            self._decide(ask_id, "expired", None, at)
            return Taken(found, "expired")
        if by != found.asker and not (founder and not allowed):
            return Taken(found, "not yours")
        state: State = "allowed" if allowed else "denied"
        if not self._decide(ask_id, state, by, at):
            return Taken(found, "decided")
        return Taken(replace(found, state=state))

    def _decide(self, ask_id: str, state: State, by: str | None, at: float) -> bool:
        # Only a waiting ask changes: of two clicks at once, on two replicas, one wins.
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE tool_asks SET state = ?, decided_by = ?, decided_at = ?"
                " WHERE id = ? AND state = 'waiting'", (state, by, at, ask_id))
        return cursor.rowcount == 1


    def connected(self, now: float | None = None) -> list[Ask]:
        """Asks to connect that the person answered (in the console) and no process has
        gone on with yet, each claimed by this one: two replicas never both go on."""
        at = time.time() if now is None else now
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM tool_asks WHERE tool = ? AND state = 'allowed'"
                " AND continued_at IS NULL AND expires_at > ?", (CONNECT_ASK, at)).fetchall()
        claimed: list[Ask] = []
        for row in rows:
            with self._db.write() as conn:
                cursor = conn.execute(
                    "UPDATE tool_asks SET continued_at = ? WHERE id = ?"
                    " AND continued_at IS NULL", (at, str(row[0])))
            if cursor.rowcount == 1:
                claimed.append(_ask(row))
        return claimed


def _ask(row: Any) -> Ask:
    return Ask(str(row[0]), Place(str(row[1]), str(row[2]), row[3], row[4]), str(row[5]),
               str(row[6]), row[7], str(row[8]), str(row[9]), json.loads(row[10]),
               float(row[11]), float(row[12]), row[13], row[14])
