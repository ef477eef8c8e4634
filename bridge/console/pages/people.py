"""People: what the identity layer holds about one person, and forgetting it — one fact,
or everything (as `thoth people forget` and "forget me" do: nothing they said before is
sent to the identity backend afterwards)."""

from __future__ import annotations

from collections.abc import Callable

from bridge.console.parts import ConsoleParts, ConsoleStores
from bridge.console.sign_in import ConsoleUser
from layers.errors import BadInput
from layers.identity.protocol import Fact, Forgotten, Person, known_as


def whose_page(user: ConsoleUser, team: str, who: str) -> tuple[str, str]:
    """The person whose facts the page shows: anyone for the operator, else oneself."""
    if user.sees_everything or user.team is None or user.user is None:
        return team, who
    return user.team, user.user


def may_forget(user: ConsoleUser, team: str, who: str) -> bool:
    return user.sees_everything or (team, who) == (user.team, user.user)


def person_of(team: str, user: str) -> Person:
    if not team.strip() or not user.strip():
        raise BadInput("say whose page: a workspace id and a user id")
    return Person(team.strip(), user.strip())


async def known_as_by(parts: ConsoleParts, user: ConsoleUser, person: Person) -> list[Person]:
    """The keys a page's person is known under: on a member's own page, their org's too
    (``known_as``); the operator looks each key up by itself."""
    if user.sees_everything or (person.team, person.user) != (user.team, user.user):
        return [person]
    return known_as(person, (await parts.memberships.of(person.team, person.user)).org)


async def facts(parts: ConsoleParts, persons: list[Person]) -> list[Fact] | None:
    """Everything known about them, in every place (shown to the operator, or to the
    person themselves); None without an identity layer."""
    if parts.identity is None:
        return None
    return [fact for person in persons for fact in await parts.identity.facts(person, None)]


async def forget_fact(parts: ConsoleParts, user: ConsoleUser, persons: list[Person],
                      fact_id: str, origin: str) -> int:
    if parts.identity is None:
        return 0
    for person in persons:
        deleted = await parts.identity.forget(person, fact_id)
        if deleted:
            _forgot_in_memory(parts, person)
            await parts.stores.run(lambda stores: stores.audit.record(
                actor=user.actor, action="fact.forget", target=f"fact:{fact_id}",
                origin=origin))
            return deleted
    return 0


async def forget_everything(parts: ConsoleParts, user: ConsoleUser, persons: list[Person],
                            origin: str) -> Forgotten | None:
    if parts.identity is None:
        return None
    forgotten = Forgotten(0)
    for person in persons:
        await parts.stores.run(_bury(person))
        forgotten += await parts.identity.forget_person(person)
        _forgot_in_memory(parts, person)
    await parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="person.forget", target=f"person:{persons[0].key}",
        origin=origin, detail=forgotten.describe()))
    return forgotten


def _bury(person: Person) -> Callable[[ConsoleStores], float]:
    """A tombstone, laid first: nothing said before it is sent afterwards."""
    return lambda stores: stores.tombstones.record(person)


def _forgot_in_memory(parts: ConsoleParts, person: Person) -> None:
    if parts.user_models is not None:
        parts.user_models.forget(person)
