"""A note proposed over MCP is governed as one proposed in Slack: `thoth mcp` (a real
subprocess, driven by the SDK's client) asks the loopback Slack whether the channel is
public, posts the card there, and a founder's ✅ on it — an Events API delivery to the
real Bolt bridge — makes it kept memory in MEMORY.md."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from layers.notes.store import Note
from tests.integration.slack_harness import CHANNEL, FOUNDER, Harness
from tests.waiting import wait_until


def _as(harness: Harness, user: str) -> StdioServerParameters:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_"))}
    env.update(THOTH_HOME=str(harness.thoth.settings.thoth_home), HF_HUB_OFFLINE="1",
               SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=harness.slack.url)
    return StdioServerParameters(command=sys.executable, env=env,
                                 args=["-m", "bridge", "mcp", "--team", "T1", "--user", user])


async def _remember(params: StdioServerParameters,
                    calls: list[dict[str, str]]) -> list[Any]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool("remember", arguments) for arguments in calls]


def _text(result: Any) -> str:
    return " ".join(part.text for part in result.content)


def test_a_note_from_mcp_waits_on_its_card_and_a_founders_check_keeps_it(
    harness: Harness,
) -> None:
    harness.slack.add_channel("G1", "pay", "private", members=["UBOT", "U1"])
    public, private, unknown, in_dm = asyncio.run(_remember(_as(harness, "U1"), [
        {"text": "Deploys need two approvals", "where": CHANNEL},
        {"text": "The pay band is secret", "where": "G1"},
        {"text": "Nobody knows this place", "where": "C404"},
        {"text": "I take Tuesdays off"},
    ]))

    assert not public.is_error, _text(public)
    note_id = public.structured_content["id"]
    assert public.structured_content["where"] == f"#{CHANNEL}"
    # A private channel, even the asker's own, is refused: its membership is not checked
    # over stdio. A channel Slack does not show is refused with Slack's word on it.
    assert private.is_error and "G1 is not a public channel of your workspace" in _text(
        private)
    assert unknown.is_error and "channel_not_found" in _text(unknown)
    store = harness.thoth.notes.store
    assert sorted(note.text for note in store.listed("proposed")) == [
        "Deploys need two approvals", "I take Tuesdays off"]

    card = next(m for m in harness.slack.messages(CHANNEL)
                if "Deploys need two approvals" in str(m.get("text")))
    # The DM note's card is in the asker's DM with Thoth (opened by their user id).
    assert any("I take Tuesdays off" in str(m.get("text")) for m in harness.slack.messages("U1"))
    assert in_dm.structured_content["where"] == "a DM with Thoth"
    # MEMORY.md names who proposed it by their Slack name, not their id.
    assert store.get(note_id).author_name == "dana"  # type: ignore[union-attr]

    # A check from someone who is not a founder keeps nothing; a founder's keeps it.
    assert harness.reaction("white_check_mark", card["ts"], user="U2") == 200
    assert harness.reaction("white_check_mark", card["ts"], user=FOUNDER) == 200
    def kept_note() -> Note | None:
        note = store.get(note_id)
        return note if note is not None and note.status == "kept" else None

    kept = wait_until(kept_note)
    assert kept.decided_by == FOUNDER
    memory = (harness.thoth.brain.persona_dir / "MEMORY.md").read_text()
    assert kept.record_line and kept.record_line in memory
    assert "Deploys need two approvals" in memory and "pay band" not in memory
