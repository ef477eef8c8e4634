"""People: what the identity layer holds about one person, and forgetting it — one fact,
or everything (as `thoth people forget` and "forget me" do: nothing they said before is
sent to the identity backend afterwards)."""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies
from layers.identity.known_as import facts_of, forget_all_of, forget_fact_of, known_as
from layers.identity.protocol import Fact, Forgotten, Person
from layers.shared.errors import BadInput


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


async def facts(parts: ConsoleDependencies, persons: list[Person]) -> list[Fact] | None:
    """Everything known about them, in every place (shown to the operator, or to the
    person themselves); None without an identity layer."""
    if parts.identity is None:
        return None
    return await facts_of(parts.identity, persons, None)


async def forget_fact(parts: ConsoleDependencies, user: SignedInPerson, persons: list[Person],
                      fact_id: str, origin: str) -> int:
    if parts.identity is None:
        return 0
    deleted = await forget_fact_of(parts.identity, persons, fact_id)
    if deleted:
        _forgot_in_memory(parts, persons)
        await parts.stores.run(lambda stores: stores.audit.record(
            actor=user.actor, action="fact.forget", target=f"fact:{fact_id}", origin=origin))
    return deleted


async def forget_everything(parts: ConsoleDependencies, user: SignedInPerson, persons: list[Person],
                            origin: str) -> Forgotten | None:
    if parts.identity is None:
        return None

    async def bury(person: Person) -> None:
        await parts.stores.run(lambda stores: stores.tombstones.record(person))

    forgotten = await forget_all_of(parts.identity, persons, first=bury)
    _forgot_in_memory(parts, persons)
    await parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="person.forget", target=f"person:{persons[0].key}",
        origin=origin, detail=forgotten.describe()))
    return forgotten


def _forgot_in_memory(parts: ConsoleDependencies, persons: list[Person]) -> None:
    if parts.user_models is not None:
        for person in persons:
            parts.user_models.forget(person)
