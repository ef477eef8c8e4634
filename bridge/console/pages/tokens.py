"""MCP tokens: a member makes, sees and revokes their own; the operator sees and revokes
everyone's (the operator is no Slack user, so makes one for someone with `thoth tokens
make`). A new token is on the page that answers its making, once: only its hash is kept.
"""

from __future__ import annotations

from bridge.access.signed_in import SignedInPerson
from bridge.access.tokens import McpToken
from bridge.console.dependencies import ConsoleDependencies
from layers.shared.errors import BadInput


async def listed(parts: ConsoleDependencies, user: SignedInPerson) -> list[McpToken]:
    if user.sees_everything:
        return await parts.stores.run(lambda stores: stores.mcp_tokens.listed())
    if user.team is None or user.user is None:
        return []
    team, person = user.team, user.user
    return await parts.stores.run(lambda stores: stores.mcp_tokens.listed(team, person))


async def make(parts: ConsoleDependencies, user: SignedInPerson, label: str,
               origin: str) -> tuple[McpToken, str]:
    """A token for the signed-in member: (the record, the token shown once)."""
    if user.team is None or user.user is None:
        raise BadInput("a token is a Slack user's: the operator makes one for someone with"
                       " `thoth tokens make --team T --user U --label L`")
    team, person = user.team, user.user

    return await parts.stores.run(lambda stores: stores.mcp_tokens.make(
        team, person, label=label, made_by=user.actor, origin=origin))


async def revoke(
    parts: ConsoleDependencies, user: SignedInPerson, token_id: str, origin: str
) -> None:
    """Revoke a token: the operator any, a member only their own."""
    mine = None if user.sees_everything else (user.user or "")
    await parts.stores.run(lambda stores: stores.mcp_tokens.revoke(
        token_id, by=user.actor, origin=origin, user=mine))
