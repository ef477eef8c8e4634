"""People: what the identity layer holds about one person, and forgetting it — one fact,
or everything (as `thoth people forget` and "forget me" do: nothing they said before is
sent to the identity backend afterwards)."""

from __future__ import annotations

from bridge.console.parts import ConsoleParts, ConsoleStores
from bridge.console.sign_in import ConsoleUser
from layers.errors import BadInput
from layers.identity.protocol import Fact, Forgotten, Person


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


async def facts(parts: ConsoleParts, person: Person) -> list[Fact] | None:
    """Everything known about them, in every place (shown to the operator, or to the
    person themselves); None without an identity layer."""
    if parts.identity is None:
        return None
    return await parts.identity.facts(person, None)


async def forget_fact(parts: ConsoleParts, user: ConsoleUser, person: Person, fact_id: str,
                      origin: str) -> int:
    if parts.identity is None:
        return 0
    deleted = await parts.identity.forget(person, fact_id)
    if deleted:
        _forgot_in_memory(parts, person)
        await parts.stores.run(lambda stores: stores.audit.record(
            actor=user.actor, action="fact.forget", target=f"fact:{fact_id}", origin=origin))
    return deleted


async def forget_everything(parts: ConsoleParts, user: ConsoleUser, person: Person,
                            origin: str) -> Forgotten | None:
    if parts.identity is None:
        return None

    def bury(stores: ConsoleStores) -> None:
        stores.tombstones.record(person)  # nothing said before this is sent afterwards

    await parts.stores.run(bury)
    forgotten = await parts.identity.forget_person(person)
    _forgot_in_memory(parts, person)
    await parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="person.forget", target=f"person:{person.key}",
        origin=origin, detail=forgotten.describe()))
    return forgotten


def _forgot_in_memory(parts: ConsoleParts, person: Person) -> None:
    if parts.user_models is not None:
        parts.user_models.forget(person)
