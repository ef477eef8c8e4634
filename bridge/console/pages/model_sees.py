"""What the model sees: for one conversation, the context blocks its latest turn put
before the model (as the turn assembled them, redacted: the working layer keeps them,
``SessionStore.keep_context``); and the persona and skills as installed, which every
prompt carries.

Whose: a conversation's context holds what was read for the people in it, so a
channel's is the operator's and founders' to read, and a DM's the operator's and its
person's only.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.procedural.persona import PersonaFile
from layers.procedural.skills import Skill
from layers.working.sessions import LastContext, Session


@dataclass(frozen=True)
class SeenInSession:
    session: Session
    # None: no turn of it kept one (a conversation from before this was kept).
    context: LastContext | None


async def seen_in(parts: ConsoleDependencies, user: SignedInPerson,
                  session_id: str) -> SeenInSession | None:
    """The session's latest context, or None when there is none ``user`` may read."""

    def read(stores: ConsoleStores) -> SeenInSession | None:
        session = stores.sessions.get(session_id)
        if session is None or not _may_read(stores, user, session):
            return None
        return SeenInSession(session, stores.sessions.context_of(session_id))

    return await parts.stores.run(read)


def _may_read(stores: ConsoleStores, user: SignedInPerson, session: Session) -> bool:
    """The operator any; a founder a channel's (a DM's holds one person's memory); a
    member their own DM, where they spoke."""
    if user.sees_everything:
        return True
    if session.place.channel_type != "im":
        return user.founder
    return (user.user is not None and session.place.team == user.team
            and session.id in stores.sessions.dm_sessions_of(user.team, user.user))


@dataclass(frozen=True)
class Installed:
    persona: list[PersonaFile]
    skills: list[tuple[str, Skill]]


async def installed(parts: ConsoleDependencies) -> Installed:
    """The persona's files as every prompt reads them, and the installed skills."""

    def read(stores: ConsoleStores) -> Installed:
        return Installed([file for file in stores.persona.load().files if file.text.strip()],
                         sorted(stores.skills.skills().items()))

    return await parts.stores.run(read)
