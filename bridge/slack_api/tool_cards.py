"""The card that asks a person to allow a team's tool call: Block Kit with Allow once,
Always allow and Deny, and the same card once it is answered (no buttons left)."""

from __future__ import annotations

import json
from typing import Any

from bridge.slack_api.escaping import escape, mention, preview
from bridge.team_tools.asks import Ask
from bridge.team_tools.config import tool_name

ALLOW_ONCE = "team_tool_allow_once"
ALLOW_ALWAYS = "team_tool_allow_always"
DENY = "team_tool_deny"
ARGUMENTS_CHARS = 2_500


# Said on every card of a server whose calls all act with the operator's key.
OPERATOR_KEY = ("It runs with the operator's key for this server: on the server it acts as"
                " Thoth's operator, not as the person who asked.")


def own_account(ask: Ask) -> str:
    """Said on every card of a server each person signs in to."""
    return (f"It runs with {mention(ask.asker)}'s own {escape(ask.server)} account: on the"
            " server it acts as them.")


def ask_card(ask: Ask, *, as_asker: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """The card's fallback text and blocks, while the call waits; ``as_asker``: the
    server takes each person's own account (not the operator's key)."""
    name = tool_name(ask.server, ask.tool)
    expires = int(ask.expires_at)
    whose = own_account(ask) if as_asker else OPERATOR_KEY
    blocks = [
        *_what(ask),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": whose}]},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": (
            f"Only {mention(ask.asker)} can allow it; a founder can deny it. It lapses"
            f" <!date^{expires}^{{time}}|in 30 minutes> if no one answers.")}]},
        {"type": "actions", "block_id": f"team_tool_ask:{ask.id}", "elements": [
            {"type": "button", "action_id": ALLOW_ONCE, "style": "primary", "value": ask.id,
             "text": {"type": "plain_text", "text": "Allow once"}},
            {"type": "button", "action_id": ALLOW_ALWAYS, "value": ask.id,
             "text": {"type": "plain_text", "text": "Always allow"}},
            {"type": "button", "action_id": DENY, "style": "danger", "value": ask.id,
             "text": {"type": "plain_text", "text": "Deny"}},
        ]},
    ]
    return f"May I run {name}? {mention(ask.asker)} decides.", blocks


def answered_card(ask: Ask, verdict: str) -> tuple[str, list[dict[str, Any]]]:
    """The card once answered: what was asked, and the verdict in place of the buttons."""
    return verdict, [*_what(ask), {"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"{verdict} {OPERATOR_KEY}"}]}]


def _what(ask: Ask) -> list[dict[str, Any]]:
    shown = escape(json.dumps(ask.arguments, ensure_ascii=False, indent=1, sort_keys=True))
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"*May I run `{escape(tool_name(ask.server, ask.tool))}`?*"
            f" {mention(ask.asker)} asked for something that needs it.")}},
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"Server `{escape(ask.server)}`, tool `{escape(ask.tool)}`, with:\n"
            f"```{preview(shown, ARGUMENTS_CHARS)}```")}},
    ]
