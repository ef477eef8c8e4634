"""Everything Thoth keeps of one person, forgotten at their wish: the one way "forget me"
is done, by the forget_about_me tool in a turn, the App Home's button, the console's
Forget me and `thoth people forget`.

Deleted, under each key the person is known by (their workspace's, and their Enterprise
Grid org's):
- what the identity layer knows of them (facts; with Honcho, the conversations they had
  alone with Thoth), a tombstone first, so nothing they said before is learned again;
- their DMs with Thoth: every exchange (text, vectors), each DM session with its
  transcript, reflection and follow-up, and Slack's record of its replies (their words
  still waiting to reach the identity layer go with the tombstone); a DM session someone
  else spoke in too (a terminal session two logins resumed) is not theirs alone, and
  stays; what the model saw in any conversation they spoke in goes;
- their memory notes, in every state (a kept note's line leaves MEMORY.md), and the notes
  drawn from their DMs;
- which of their turns recalled what (the console's provenance);
- their MCP tokens are revoked (a revoked token is kept, as every revoked token is);
- the team's tools they always allowed, and their calls still waiting for their yes.

Kept, and said so (``PersonForgotten.describe``): their exchanges in channels and group
DMs, each part of a conversation other people took part in (🗑️ or the console's Forget
takes one out); the audit log, which records who did what (this forget too), by id; the
brain's git history, which keeps the MEMORY.md lines taken out, as it keeps every edit;
and skills they proposed, which are the team's procedures once approved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from layers.episodic.memory import EpisodicMemory
from layers.identity.known_as import facts_of, forget_all_of, forget_fact_of
from layers.identity.protocol import Forgotten, IdentityBackend, Person
from layers.identity.tombstones import Tombstones
from layers.identity.user_models import UserModels
from layers.notes.governance import NoteGovernance
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded
from layers.shared.storage.database import Database
from layers.working.sessions import SessionStore

# Rows of a DM session with nothing else to tidy, deleted before the session itself.
_SESSION_ROWS = ("reflection_writes", "reflections", "followups", "slack_replies")

KEPT_WHY = (
    "Kept: {kept} exchange(s) in channels and group DMs (each is part of a conversation"
    " other people took part in: 🗑️ or the console's Forget takes one out), the audit"
    " log's record of what was done (by id), and the brain's git history.")


@dataclass(frozen=True)
class PersonForgotten:
    """What "forget me" deleted, and what it kept."""

    # None: the identity layer is off.
    identity: Forgotten | None
    dm_exchanges: int
    dm_sessions: int
    notes: int
    tokens: int
    # Their exchanges in channels and group DMs.
    kept_with_others: int

    def describe(self) -> str:
        """What was done: one line, what was deleted, then what was kept and why."""
        said = f"deleted {self._deleted()}"
        if self.tokens:
            said += f"; {self.tokens} MCP token(s) revoked"
        return f"{said}. {self.kept()}"

    def would(self) -> str:
        """What forgetting would do, asked before it is done."""
        said = f"Forgetting deletes {self._deleted()}"
        if self.tokens:
            said += f", and revokes {self.tokens} MCP token(s)"
        return f"{said}."

    def kept(self) -> str:
        return KEPT_WHY.format(kept=self.kept_with_others)

    def _deleted(self) -> str:
        facts = ("no identity layer" if self.identity is None
                 else self.identity.describe().removeprefix("deleted "))
        return (f"{self.dm_exchanges} exchange(s) and {self.dm_sessions} session(s) of"
                f" their DMs with Thoth, {self.notes} note(s), {facts}")


@dataclass(frozen=True)
class ForgetStores:
    db: Database
    episodic: EpisodicMemory
    sessions: SessionStore
    notes: NoteGovernance
    tombstones: Tombstones
    audit: AuditLog


class PersonForgetting:
    """Built once (``bridge/app.py``); a coroutine's (the stores are reached offloaded)."""

    def __init__(self, stores: Offloaded[ForgetStores], identity: IdentityBackend | None,
                 user_models: UserModels | None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._stores = stores
        self._identity = identity
        self._user_models = user_models
        self._clock = clock

    async def forget(self, persons: Sequence[Person], *, actor: str,
                     origin: str) -> PersonForgotten:
        """Forget everything of ``persons`` (one person's keys, their own first)."""
        async def bury(person: Person) -> None:
            await self._stores.run(lambda stores: stores.tombstones.record(person))

        # The identity backend first (it may be a server, and may fail): nothing else is
        # gone yet, and the forget can simply run again.
        identity = None
        if self._identity is not None:
            identity = await forget_all_of(self._identity, persons, first=bury)
        else:
            for person in persons:
                await bury(person)
        forgotten = await self._stores.run(
            lambda stores: self._forget_stored(stores, persons, actor, identity))
        self._forgot_in_memory(persons)
        await self._stores.run(lambda stores: stores.audit.record(
            actor=actor, action="person.forget", target=f"person:{persons[0].key}",
            origin=origin, detail=forgotten.describe()))
        return forgotten

    async def preview(self, persons: Sequence[Person]) -> PersonForgotten:
        """What ``forget`` would delete and keep, deleting nothing (asked first)."""
        identity = (None if self._identity is None
                    else Forgotten(len(await facts_of(self._identity, persons, None))))
        return await self._stores.run(
            lambda stores: self._counted(stores, persons, identity))

    async def forget_fact(self, persons: Sequence[Person], fact_id: str, *, actor: str,
                          origin: str) -> int:
        """Forget one fact of theirs; how many were deleted (0: none of theirs by that id)."""
        if self._identity is None:
            return 0
        deleted = await forget_fact_of(self._identity, persons, fact_id)
        if deleted:
            self._forgot_in_memory(persons)
            await self._stores.run(lambda stores: stores.audit.record(
                actor=actor, action="fact.forget", target=f"fact:{fact_id}", origin=origin))
        return deleted

    def _forget_stored(self, stores: ForgetStores, persons: Sequence[Person], actor: str,
                       identity: Forgotten | None) -> PersonForgotten:
        exchanges = sessions = notes = tokens = kept = 0
        for person in persons:
            dm_sessions = stores.sessions.dm_sessions_of(person.team, person.user)
            notes += stores.notes.forget_of(person.team, person.user, dm_sessions, by=actor)
            exchanges += stores.episodic.forget_dms_of(person.team, person.user)
            stores.episodic.uses.forget_asked_by(person.team, person.user)
            kept += stores.episodic.store.count_said_with_others(person.team, person.user)
            tokens += self._delete_rows(stores.db, person, dm_sessions, by=actor)
            sessions += stores.sessions.delete(dm_sessions)
        return PersonForgotten(identity, exchanges, sessions, notes, tokens, kept)

    def _counted(self, stores: ForgetStores, persons: Sequence[Person],
                 identity: Forgotten | None) -> PersonForgotten:
        exchanges = sessions = notes = tokens = kept = 0
        for person in persons:
            dm_sessions = stores.sessions.dm_sessions_of(person.team, person.user)
            sessions += len(dm_sessions)
            notes += len(stores.notes.store.of_person(person.team, person.user, dm_sessions))
            exchanges += len(stores.episodic.store.rowids_of_dms(person.team, person.user))
            kept += stores.episodic.store.count_said_with_others(person.team, person.user)
            with stores.db.read() as conn:
                tokens += int(conn.execute(
                    'SELECT count(*) FROM mcp_tokens WHERE team = ? AND "user" = ?'
                    " AND revoked_at IS NULL", (person.team, person.user)).fetchone()[0])
        return PersonForgotten(identity, exchanges, sessions, notes, tokens, kept)

    def _delete_rows(self, db: Database, person: Person, dm_sessions: Sequence[str], *,
                     by: str) -> int:
        """The rows with nothing else to tidy; how many MCP tokens were revoked."""
        marks = ",".join("?" * len(dm_sessions)) or "NULL"
        with db.write() as conn:
            for table in _SESSION_ROWS:
                conn.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})",
                             tuple(dm_sessions))
            # What the model saw in any conversation they spoke in may hold what was
            # known of them: those contexts go too (the next turn keeps a new one).
            conn.execute(
                "DELETE FROM session_contexts WHERE session_id IN (SELECT t.session_id"
                ' FROM transcript_turns t JOIN sessions s ON s.id = t.session_id'
                ' WHERE s.team = ? AND t."user" = ?)', (person.team, person.user))
            # Their standing yeses for the team's tools, and calls waiting for their yes
            # (exact arguments they asked with) go.
            conn.execute('DELETE FROM tool_grants WHERE team = ? AND "user" = ?',
                         (person.team, person.user))
            conn.execute("DELETE FROM tool_asks WHERE team = ? AND asker = ?",
                         (person.team, person.user))
            # What they said while the model was overloaded, waiting to be answered.
            conn.execute('DELETE FROM answer_later WHERE team = ? AND "user" = ?',
                         (person.team, person.user))
            return int(conn.execute(
                "UPDATE mcp_tokens SET revoked_at = ?, revoked_by = ?"
                ' WHERE team = ? AND "user" = ? AND revoked_at IS NULL',
                (self._clock(), by, person.team, person.user)).rowcount or 0)

    def _forgot_in_memory(self, persons: Sequence[Person]) -> None:
        if self._user_models is not None:
            for person in persons:
                self._user_models.forget(person)
