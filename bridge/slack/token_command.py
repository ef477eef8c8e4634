"""`/thoth token` in a DM with Thoth: a person's own token for MCP over HTTP.

`/thoth token [what it is for]` makes one and shows it once, only to them; `/thoth
tokens` lists theirs; `/thoth revoke ID` revokes one of theirs at once. Decided: only
in a DM with Thoth, since a token is a secret and a channel is no place to make one
(the answer is ephemeral everywhere, but someone may be sharing their screen in a
channel). The token is Thoth's own, tied to the Slack user who typed the command: Slack
signed the request that names them.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.access.tokens import McpToken
from bridge.slack.commands import answer_privately
from bridge.slack.stores import SlackStores
from bridge.slack_api.escaping import escape
from layers.audit.log import slack_actor
from layers.errors import BadInput
from layers.offloaded import Offloaded

ORIGIN = "slack /thoth"
DEFAULT_LABEL = "MCP client"


async def thoth_command(stores: Offloaded[SlackStores], client: AsyncWebClient,
                        command: dict[str, Any]) -> None:
    action, _, rest = str(command.get("text") or "").strip().partition(" ")
    team, user = str(command.get("team_id") or ""), str(command.get("user_id") or "")
    in_dm = (command.get("channel_name") == "directmessage"
             or str(command.get("channel_id") or "").startswith("D"))
    if action not in ("token", "tokens", "revoke"):
        markdown = escape(messages.THOTH_COMMAND_USAGE)
    elif not in_dm:
        markdown = escape(messages.TOKENS_ONLY_IN_A_DM)
    elif action == "token":
        markdown = await stores.run(lambda s: _made(s, team, user, rest.strip()))
    elif action == "tokens":
        markdown = await stores.run(lambda s: _listed(s, team, user))
    else:
        markdown = await stores.run(lambda s: _revoked(s, user, rest.strip()))
    await answer_privately(client, command, markdown)


def _made(stores: SlackStores, team: str, user: str, label: str) -> str:
    try:
        token, secret = stores.mcp_tokens.make(team, user, label=label or DEFAULT_LABEL,
                                               made_by=slack_actor(user), origin=ORIGIN)
    except BadInput as error:
        return escape(str(error))
    return messages.MCP_TOKEN_MADE.format(id=token.id, label=escape(token.label),
                                          secret=secret)


def _listed(stores: SlackStores, team: str, user: str) -> str:
    tokens = stores.mcp_tokens.listed(team, user)
    if not tokens:
        return escape(messages.NO_MCP_TOKENS)
    return "\n".join(f"- {_line(token)}" for token in tokens)


def _revoked(stores: SlackStores, user: str, token_id: str) -> str:
    try:
        token = stores.mcp_tokens.revoke(token_id, by=slack_actor(user), origin=ORIGIN,
                                         user=user)
    except BadInput as error:
        return escape(str(error))
    return escape(messages.MCP_TOKEN_REVOKED.format(id=token.id, label=token.label))


def _line(token: McpToken) -> str:
    state = "revoked" if token.revoked else "live"
    return f"`{token.id}` {escape(token.label)} ({state})"
