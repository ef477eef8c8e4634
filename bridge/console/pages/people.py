"""People: what the identity layer holds about one person, and forgetting it — one fact,
or everything Thoth keeps of them (``bridge/forget_person.py``, as every "forget me")."""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies
from bridge.forget_person import PersonForgotten
from layers.identity.known_as import facts_of, known_as
from layers.identity.protocol import Fact, Person
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
    return await parts.forgetting.forget_fact(persons, fact_id, actor=user.actor, origin=origin)


async def forget_everything(parts: ConsoleDependencies, user: SignedInPerson,
                            persons: list[Person], origin: str) -> PersonForgotten:
    return await parts.forgetting.forget(persons, actor=user.actor, origin=origin)
