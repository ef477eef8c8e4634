"""People: everything Thoth keeps about one person, on one page — what the identity
layer knows (with where each fact was said), their notes in every state, what they said
(newest first, a page at a time), their MCP tokens, the team's tools they always allow
(``tool_grants.py``, each revoked there) — and forgetting it: one fact, or
everything (``bridge/forget_person.py``, as every "forget me"), said first and then done.

A member's page is their own ("what Thoth knows about me"); the operator's, anyone's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bridge.access.signed_in import SignedInPerson
from bridge.access.tokens import McpToken
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.episodes import Listed, viewer_of
from bridge.console.pages.notes import withdrawn
from bridge.console.pages.paging import cursor_of, newest_page
from bridge.console.pages.tool_grants import granted
from bridge.console.slack_cards import show_note_decided
from bridge.forget_person import PersonForgotten
from bridge.team_tools.grants import Grant
from layers.episodic.episode import Hit
from layers.episodic.episode_filter import EpisodeFilter
from layers.identity.known_as import facts_of, known_as
from layers.identity.protocol import Fact, Person
from layers.notes.store import Note
from layers.shared.errors import BadInput

# What they said, shown on their page a page at a time (the Episodes page has it all).
SAID_SHOWN = 10


def whose_page(user: SignedInPerson, team: str, who: str) -> tuple[str, str]:
    """The person whose facts the page shows: anyone for the operator, else oneself."""
    if user.sees_everything or user.team is None or user.user is None:
        return team, who
    return user.team, user.user


def may_forget(user: SignedInPerson, team: str, who: str) -> bool:
    return user.sees_everything or (team, who) == (user.team, user.user)


def person_of(team: str, user: str) -> Person:
    if not team.strip() or not user.strip():
        raise BadInput("say whose page: a workspace id and a user id")
    return Person(team.strip(), user.strip())


async def known_as_by(
    parts: ConsoleDependencies, user: SignedInPerson, person: Person
) -> list[Person]:
    """The keys a page's person is known under: on a member's own page, their org's too
    (``known_as``); the operator looks each key up by itself."""
    if user.sees_everything or (person.team, person.user) != (user.team, user.user):
        return [person]
    return known_as(person, (await parts.memberships.of(person.team, person.user)).org)


async def every_key(parts: ConsoleDependencies, person: Person) -> list[Person]:
    """Every key ``person`` is known under (their org's too, on Enterprise Grid): what a
    forget reaches, whoever asks it (the operator's page shows each key by itself)."""
    return known_as(person, (await parts.memberships.of(person.team, person.user)).org)


async def facts(parts: ConsoleDependencies, persons: list[Person]) -> list[Fact] | None:
    """Everything known about them, in every place (shown to the operator, or to the
    person themselves); None without an identity layer."""
    if parts.identity is None:
        return None
    return await facts_of(parts.identity, persons, None)


async def forget_fact(parts: ConsoleDependencies, user: SignedInPerson, persons: list[Person],
                      fact_id: str, origin: str) -> int:
    return await parts.forgetting.forget_fact(persons, fact_id, actor=user.actor, origin=origin)


async def forget_everything(parts: ConsoleDependencies, user: SignedInPerson,
                            persons: list[Person], origin: str) -> PersonForgotten:
    return await parts.forgetting.forget(persons, actor=user.actor, origin=origin)


@dataclass(frozen=True)
class Whole:
    """Everything kept about one person that the reader may see; for the operator who
    searched a name, the people who went by it (``named``)."""

    # None: the identity layer is off.
    facts: list[Fact] | None
    # Where each fact's session was: "a DM", "#general", by session id.
    said_where: dict[str, str]
    notes: list[Note]
    said: Listed
    tokens: list[McpToken]
    # The team's tools they let run without asking ("Always allow").
    grants: list[Grant] = field(default_factory=list)
    named: list[Person] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.facts or self.notes or self.said.hits or self.tokens or self.grants)


async def whole(parts: ConsoleDependencies, user: SignedInPerson, persons: list[Person],
                older: str = "") -> Whole:
    """``persons`` (one person's keys), as ``user`` may read them."""
    known = await facts(parts, persons)
    viewer = await viewer_of(parts, user)
    cursor = cursor_of(older, of="what they said")

    def read(stores: ConsoleStores) -> Whole:
        sessions = {fact.session_id for fact in known or [] if fact.session_id}
        said_where = {session_id: _where(stores, session_id) for session_id in sessions}
        notes = [note for person in persons
                 for note in stores.notes.store.of_person(person.team, person.user, [])]
        # What they said goes by their user id, the same under each of their keys.
        newest, older_on = newest_page(stores.episodic.store.recent(
            viewer, EpisodeFilter(user=persons[0].user), SAID_SHOWN + 1,
            older_than=cursor), SAID_SHOWN)
        said = Listed([Hit(episode, 0.0) for episode in newest], older=older_on)
        tokens = [token for person in persons
                  for token in stores.mcp_tokens.listed(person.team, person.user)]
        return Whole(known, said_where, sorted(notes, key=lambda note: -note.created_at),
                     said, tokens, granted(stores, persons))

    found = await parts.stores.run(read)
    if found.empty and user.sees_everything:
        # Searched by name ("dana"), not id: the people who went by it, to choose from.
        named = await parts.stores.run(lambda stores: stores.episodic.store.people_named(
            persons[0].user, persons[0].team or None))
        return replace(found, named=[Person(team, who) for team, who in named
                                     if Person(team, who) not in persons])
    return found


def _where(stores: ConsoleStores, session_id: str) -> str:
    session = stores.sessions.get(session_id)
    if session is None:
        return "a conversation since forgotten"
    if session.place.channel_type == "im":
        return "a DM"
    return f"#{session.place.channel_name}" if session.place.channel_name else (
        f"{session.place.channel_type} channel {session.place.channel}")


async def withdraw_own_note(parts: ConsoleDependencies, user: SignedInPerson, person: Person,
                            note_id: str, origin: str) -> None:
    """Withdraw a note ``person`` asked for (``BadInput``: not theirs, or nothing to
    withdraw); its Slack cards say so."""

    def change(stores: ConsoleStores) -> Note:
        note = stores.notes.store.get(note_id)
        if note is None or (note.place.team, note.user) != (person.team, person.user):
            raise BadInput("no such note of theirs")
        return withdrawn(stores, note_id, by=user.name, actor=user.actor, origin=origin,
                         why="withdrawn by its asker in the console")

    await show_note_decided(parts, await parts.stores.run(change))


async def what_forgetting_does(parts: ConsoleDependencies,
                               persons: list[Person]) -> PersonForgotten:
    """What forgetting everything would delete and keep: asked before it is done."""
    return await parts.forgetting.preview(persons)
