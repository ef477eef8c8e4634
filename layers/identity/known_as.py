"""A person known under more than one key: their workspace's, and on Enterprise Grid their
org's, for what was learned in a channel shared across the org's workspaces (kept as the
org's place, ``bridge/slack_api/directory.place_team``). What a person sees of themselves, and
what they forget, covers every key: each way in (the console, the Home tab, the turn's
tool, MCP) asks through these, and adds its own audit line and cache drop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from layers.identity.protocol import Fact, Forgotten, IdentityBackend, Person
from layers.shared.places import Viewer


def known_as(person: Person, org: str | None) -> list[Person]:
    """Every key ``person`` is known under (the workspace's first)."""
    if org is None or org == person.team:
        return [person]
    return [person, Person(org, person.user, person.name)]


async def facts_of(identity: IdentityBackend, persons: Sequence[Person],
                   viewer: Viewer | None) -> list[Fact]:
    """What is known under each key that ``viewer`` may read (None: everything)."""
    return [fact for person in persons for fact in await identity.facts(person, viewer)]


async def forget_fact_of(identity: IdentityBackend, persons: Sequence[Person],
                         fact_id: str) -> int:
    """Delete the fact from whichever key holds it; how many were deleted."""
    for person in persons:
        deleted = await identity.forget(person, fact_id)
        if deleted:
            return deleted
    return 0


async def forget_all_of(identity: IdentityBackend, persons: Sequence[Person], *,
                        first: Callable[[Person], Awaitable[object]] | None = None
                        ) -> Forgotten:
    """"Forget me" for each of ``persons``; ``first`` runs before each (a tombstone: nothing said
    before it is sent to the backend afterwards)."""
    forgotten = Forgotten(0)
    for person in persons:
        if first is not None:
            await first(person)
        forgotten += await identity.forget_person(person)
    return forgotten
