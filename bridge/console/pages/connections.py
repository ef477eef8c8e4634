"""A person's own connections to the team's remote servers (``"auth": "oauth"`` in
``mcp.json``): connecting one (the sign-in runs in their browser, from a link in Slack or
this page), seeing since when and when last used, and disconnecting. The operator's view
counts the connected people by server, and never shows a token: nothing here can.

Each connect and disconnect is in the audit log (``connection.connect``,
``connection.disconnect``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.access.signed_in import SignedInPerson
from bridge.connections.oauth_client import Connector
from bridge.connections.store import Connection
from bridge.console.dependencies import ConsoleDependencies
from bridge.team_tools.asks import CONNECT_ASK
from layers.shared.errors import BadInput


@dataclass(frozen=True)
class Shown:
    # The servers people connect to, by name (none: nothing to connect).
    servers: list[str]
    # The signed-in person's own connections.
    mine: list[Connection]
    # The operator's view: how many people are connected to each server.
    people_by_server: dict[str, int]


def _connector(parts: ConsoleDependencies) -> Connector:
    if parts.connector is None:
        raise BadInput('no server in mcp.json takes people\'s own accounts ("auth": "oauth")')
    return parts.connector


def _person(user: SignedInPerson) -> tuple[str, str]:
    if user.team is None or user.user is None:
        raise BadInput("a connection is a Slack person's own: sign in with Slack to connect")
    return user.team, user.user


async def shown(parts: ConsoleDependencies, user: SignedInPerson) -> Shown:
    connector = parts.connector
    if connector is None:
        return Shown([], [], {})
    mine: list[Connection] = []
    if user.team is not None and user.user is not None:
        team, person = user.team, user.user
        mine = await connector.store.run(lambda store: store.of_person(team, person))
    counts = (await connector.store.run(lambda store: store.people_by_server())
              if user.sees_everything else {})
    return Shown(sorted(connector.servers), mine, counts)


async def start(parts: ConsoleDependencies, user: SignedInPerson, server: str,
                ask_id: str | None) -> str:
    """Where to send the browser to sign in to ``server``."""
    team, person = _person(user)
    if ask_id is not None and not await _asks_to_connect(parts, ask_id, team, person, server):
        ask_id = None  # connected all the same; no conversation waits on this link
    return await _connector(parts).start(team, person, server, ask_id)


async def _asks_to_connect(parts: ConsoleDependencies, ask_id: str, team: str, person: str,
                           server: str) -> bool:
    """Whether ``ask_id`` is this person's waiting ask to connect ``server`` (a link's
    ``ask`` is the browser's to change: it must not answer any other ask)."""
    ask = await parts.stores.run(lambda stores: stores.asks.get(ask_id))
    return (ask is not None and ask.tool == CONNECT_ASK and ask.server == server
            and ask.place.team == team and ask.asker == person and ask.state == "waiting")


async def finish(parts: ConsoleDependencies, user: SignedInPerson, state: str, *,
                 code: str | None, error: str | None, issuer: str | None,
                 origin: str) -> str:
    """Take the browser's return; what the page then says. A conversation in Slack that
    waited on it goes on (its ask answered: ``bridge/slack/connect_links.py``)."""
    team, person = _person(user)
    started = await _connector(parts).finish(state, code=code, error=error, issuer=issuer,
                                            team=team, user=person)
    ask_id = started.ask_id
    if ask_id is not None and await _asks_to_connect(parts, ask_id, team, person,
                                                     started.server):
        await parts.stores.run(lambda stores: stores.asks.take(ask_id, person, allowed=True))
    await parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="connection.connect", target=started.server,
        origin=origin, detail=f"{team}:{person}'s own account"))
    going_on = (" The conversation in Slack goes on now." if started.ask_id is not None
                else "")
    return f"Connected: {started.server} now acts as you when Thoth uses it for you.{going_on}"


async def disconnect(parts: ConsoleDependencies, user: SignedInPerson, server: str,
                     origin: str) -> str:
    team, person = _person(user)
    if not await _connector(parts).disconnect(team, person, server, actor=user.actor,
                                              origin=origin):
        raise BadInput(f"you are not connected to {server}")
    return f"Disconnected: {server} is asked to connect again before Thoth uses it for you."
