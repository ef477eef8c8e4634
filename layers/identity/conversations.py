"""Which conversations a person took part in, from Thoth's own transcripts: those they
had alone with the agent, and those others spoke in too ("forget me" deletes the first)."""

from __future__ import annotations

from dataclasses import dataclass

from layers.identity.protocol import Person
from layers.shared.storage.database import Database


@dataclass(frozen=True)
class TheirConversations:
    alone: list[str]  # session ids: only this person and the agent spoke
    shared: list[str]  # session ids: someone else spoke too


class Conversations:
    def __init__(self, db: Database) -> None:
        self._db = db

    def of(self, person: Person) -> TheirConversations:
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT t.session_id, COUNT(DISTINCT COALESCE(t.\"user\", ''))"
                " FROM transcript_turns t JOIN sessions s ON s.id = t.session_id"
                " WHERE s.team = :team AND t.session_id IN (SELECT session_id FROM"
                ' transcript_turns WHERE "user" = :user) GROUP BY t.session_id',
                {"team": person.team, "user": person.user},
            ).fetchall()
        alone = [str(sid) for sid, speakers in rows if int(speakers) == 1]
        shared = [str(sid) for sid, speakers in rows if int(speakers) > 1]
        return TheirConversations(alone, shared)
