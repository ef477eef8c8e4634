"""A person's standing yeses for the team's tools ("Always allow" on a Slack card, `a` in
`thoth chat`: ``bridge/team_tools/grants.py``), as their page lists them, and revoking
one: by the person themself, or from the operator's view (the operator, founders).

A revoked tool is asked about again before it next runs in their turns. Each revoke is
written to the audit log (``tool.revoke``: who revoked, the tool as the model calls it,
whose grant it was), beside the ``tool.always_allow`` line that made it.
"""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.team_tools.config import tool_name
from bridge.team_tools.grants import Grant
from layers.identity.protocol import Person
from layers.shared.errors import BadInput


def granted(stores: ConsoleStores, persons: list[Person]) -> list[Grant]:
    """Every grant ``persons`` (one person's keys) hold, by server and tool."""
    return sorted((grant for person in persons
                   for grant in stores.grants.of_person(person.team, person.user)),
                  key=lambda grant: (grant.server, grant.tool, grant.team))


async def revoke(parts: ConsoleDependencies, user: SignedInPerson, persons: list[Person],
                 server: str, tool: str, origin: str) -> str:
    """Revoke the grant of ``tool`` of ``server`` under each of ``persons``' keys, audited;
    ``BadInput`` when they hold none (nothing changes, nothing is written). Whether
    ``user`` may is the caller's to have asked. Returns what the page then says."""
    if not server.strip() or not tool.strip():
        raise BadInput("say which tool: its server and its name")
    name = tool_name(server, tool)

    def change(stores: ConsoleStores) -> None:
        revoked = [person for person in persons
                   if stores.grants.revoke(person.team, person.user, server, tool)]
        if not revoked:
            raise BadInput(f"{name} is not a tool they always allow")
        stores.audit.record(
            actor=user.actor, action="tool.revoke", target=name, origin=origin,
            detail="the grant of " + ", ".join(f"{p.team}:{p.user}" for p in revoked))

    await parts.stores.run(change)
    return f"Revoked: {tool} of {server} is asked about again before it runs."
