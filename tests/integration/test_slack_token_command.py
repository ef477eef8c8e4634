"""`/thoth token` through the real Bolt bridge: a person makes their own MCP token in a
DM with Thoth, sees it once (ephemeral, only to them), lists and revokes their own, and
nobody else's; in a channel it makes nothing."""

from __future__ import annotations

import re

from bridge import messages
from tests.integration.slack_harness import CHANNEL, Harness
from tests.waiting import wait_until

TOKEN = re.compile(r"thoth_mcp_[A-Za-z0-9_\-]{40,}")


def _answers(harness: Harness, channel: str, count: int) -> list[str]:
    return [str(e) for e in wait_until(
        lambda: len(harness.slack.ephemerals(channel)) >= count
        and harness.slack.ephemerals(channel))]


def test_a_person_makes_lists_and_revokes_their_own_token_in_a_dm(harness: Harness) -> None:
    harness.slack.add_channel("D1", "dana-dm", "im")
    harness.slack.add_channel("D2", "ari-dm", "im")
    tokens = harness.thoth.mcp_tokens

    def command(text: str, user: str = "U1", channel: str = "D1") -> None:
        name = "directmessage" if channel.startswith("D") else "general"
        assert harness.command("/thoth", text, user=user, channel=channel,
                               channel_name=name)[0] == 200

    command("token laptop Claude Code")
    (made,) = _answers(harness, "D1", 1)
    secret = TOKEN.search(made)
    assert secret is not None, made
    held = tokens.holder(secret.group())
    assert held is not None and (held.team, held.user, held.label) == (
        "T1", "U1", "laptop Claude Code")
    # Kept only as its hash.
    with harness.thoth.db.read() as conn:
        rows = conn.execute("SELECT * FROM mcp_tokens").fetchall()
    assert secret.group() not in str(rows)

    command("token", channel=CHANNEL)  # in a channel: refused, nothing made
    refused = wait_until(lambda: harness.slack.ephemerals(CHANNEL))
    assert "in a DM with Thoth" in str(refused[0]) and len(tokens.listed()) == 1

    command("tokens")
    listed = _answers(harness, "D1", 2)[1]
    assert held.id in listed and "laptop Claude Code" in listed and "thoth_mcp_" not in listed

    command(f"revoke {held.id}", user="U2", channel="D2")  # not theirs
    assert "no MCP token with the id" in _answers(harness, "D2", 1)[0]
    assert tokens.holder(secret.group()) is not None
    command(f"revoke {held.id}")
    assert "Revoked" in _answers(harness, "D1", 3)[2]
    assert tokens.holder(secret.group()) is None

    command("please")
    assert messages.THOTH_COMMAND_USAGE.split(":")[0] in _answers(harness, "D1", 4)[3]
    assert [(e.actor, e.action) for e in reversed(harness.thoth.audit.entries(action="mcp"))] \
        == [("slack:U1", "mcp.token_make"), ("slack:U1", "mcp.token_revoke")]
