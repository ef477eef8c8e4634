"""`/thoth token|tokens|revoke` in a DM with Thoth: a person's own tokens for MCP over HTTP
(and `/thoth connections|disconnect NAME`: their own accounts, ``connections.py``;
`/thoth routine add|routines`: their routines, ``routines.py``).

`/thoth token [what it is for]` makes one and shows it once, only to them; `/thoth
tokens` lists theirs; `/thoth revoke ID` revokes one of theirs at once. Decided: only
in a DM with Thoth, since a token is a secret and a channel is no place to make one
(the answer is ephemeral everywhere, but someone may be sharing their screen in a
channel). The token is Thoth's own, tied to the Slack user who typed the command: Slack
signed the request that names them.
"""

from __future__ import annotations

from bridge import messages
from bridge.access.tokens import McpToken, McpTokens
from bridge.commands import Command, CommandServices, Invocation, Reply, connections, routines
from bridge.slack_api.escaping import escape
from layers.shared.audit import slack_actor
from layers.shared.errors import BadInput

ORIGIN = "slack /thoth"
DEFAULT_LABEL = "MCP client"


async def thoth(invocation: Invocation, services: CommandServices) -> Reply:
    action, _, rest = invocation.args.strip().partition(" ")
    team, user, argument = invocation.place.team, invocation.user, rest.strip()
    if action == "token":
        markdown = await services.tokens.run(lambda t: _made(t, team, user, argument))
    elif action == "tokens":
        markdown = await services.tokens.run(lambda t: _listed(t, team, user))
    elif action == "revoke":
        markdown = await services.tokens.run(lambda t: _revoked(t, user, argument))
    elif action == "connections":
        markdown = await connections.listed(services.connector, team, user)
    elif action == "disconnect":
        markdown = await connections.disconnected(services.connector, team, user, argument)
    elif action == "routines":
        return await routines.listed(invocation, services)
    elif action == "routine":
        verb, _, words = argument.partition(" ")
        if verb != "add":
            return Reply(messages.ROUTINE_ADD_USAGE, mistake=True)
        return await routines.add(invocation, services, words)
    else:
        return Reply(messages.THOTH_COMMAND_USAGE)
    return Reply(markdown, markdown=True)


def _made(tokens: McpTokens, team: str, user: str, label: str) -> str:
    try:
        token, secret = tokens.make(team, user, label=label or DEFAULT_LABEL,
                                    made_by=slack_actor(user), origin=ORIGIN)
    except BadInput as error:
        return escape(str(error))
    return messages.MCP_TOKEN_MADE.format(id=token.id, label=escape(token.label),
                                          secret=secret)


def _listed(tokens: McpTokens, team: str, user: str) -> str:
    listed = tokens.listed(team, user)
    if not listed:
        return escape(messages.NO_MCP_TOKENS)
    return "\n".join(f"- {_line(token)}" for token in listed)


def _revoked(tokens: McpTokens, user: str, token_id: str) -> str:
    try:
        token = tokens.revoke(token_id, by=slack_actor(user), origin=ORIGIN, user=user)
    except BadInput as error:
        return escape(str(error))
    return escape(messages.MCP_TOKEN_REVOKED.format(id=token.id, label=token.label))


def _line(token: McpToken) -> str:
    state = "revoked" if token.revoked else "live"
    return f"`{token.id}` {escape(token.label)} ({state})"


COMMAND = Command(
    name="thoth",
    help=("In a DM with Thoth: token, tokens, revoke ID, connections, disconnect NAME,"
          " routine add, routines"),
    usage_hint="token laptop Claude Code",
    handler=thoth,
    only_in_a_dm=True,
    refused_outside_a_dm=messages.TOKENS_ONLY_IN_A_DM,
)
