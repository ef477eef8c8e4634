"""`/thoth connections` and `/thoth disconnect NAME`: a person's own accounts on the
team's remote servers (``bridge/connections/``), listed, and one ended: its token
revoked at the server where it offers that, and deleted. Connecting is a link (Slack
sends it when a conversation needs the server; the console's Connections page has one
for each server)."""

from __future__ import annotations

from bridge.connections.oauth_client import Connector
from bridge.slack_api.escaping import escape
from layers.shared.audit import slack_actor

NONE_TAKEN = "No server of the team takes people's own accounts."


async def listed(connector: Connector | None, team: str, user: str) -> str:
    if connector is None:
        return escape(NONE_TAKEN)
    mine = {connection.server for connection in
            await connector.store.run(lambda store: store.of_person(team, user))}
    return "\n".join(
        f"- {escape(server)}: {'connected' if server in mine else 'not connected'}"
        for server in sorted(connector.servers))


async def disconnected(connector: Connector | None, team: str, user: str, server: str) -> str:
    if connector is None:
        return escape(NONE_TAKEN)
    if not server:
        return escape("Say which: /thoth disconnect NAME (/thoth connections lists them).")
    if not await connector.disconnect(team, user, server, actor=slack_actor(user),
                                      origin="slack /thoth"):
        return escape(f"You are not connected to {server}.")
    return escape(f"Disconnected {server}: your token is revoked and deleted. Thoth asks you"
                  " to connect again before it uses it for you.")
