"""What a person proposes over MCP is governed as what they propose in Slack: `thoth mcp`
(a real subprocess, driven by the SDK's client) asks the loopback Slack whether a note's
channel is public and posts the note's card there (a skill draft's in each founder's DM),
and a founder's ✅ on a card — an Events API delivery to the real Bolt bridge — makes
the note kept memory in MEMORY.md, and the draft a skill of the brain."""

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
    # isolated_environment took every outside service's variable out already.
    env = {**os.environ, "THOTH_HOME": str(harness.thoth.settings.thoth_home),
           "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": harness.slack.url,
           "FOUNDER_USER_IDS": FOUNDER}
    return StdioServerParameters(command=sys.executable, env=env,
                                 args=["-m", "bridge", "mcp", "--team", "T1", "--user", user])


async def _calls(params: StdioServerParameters, tool: str,
                 calls: list[dict[str, str]]) -> list[Any]:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(tool, arguments) for arguments in calls]


def _text(result: Any) -> str:
    return " ".join(part.text for part in result.content)


def test_a_note_from_mcp_waits_on_its_card_and_a_founders_check_keeps_it(
    harness: Harness,
) -> None:
    harness.slack.add_channel("G1", "pay", "private", members=["UBOT", "U1"])
    public, private, unknown, in_dm = asyncio.run(_calls(_as(harness, "U1"), "remember", [
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
    assert private.is_error and "G1 is not a channel you may write to" in _text(private)
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


INSTRUCTIONS = (
    "1. Open the incident channel and name the incident lead.\n"
    "2. Post status every thirty minutes until it is resolved.\n"
    "3. The pager key is {key}; rotate it after the incident.\n")


def test_a_skill_proposed_over_mcp_is_carded_to_each_founder_and_approved_into_the_brain(
    harness: Harness,
) -> None:
    key = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    proposed, bad_name, too_short = asyncio.run(_calls(_as(harness, "U1"), "propose_skill", [
        {"name": "incident-comms", "description": "How we talk during an incident",
         "instructions": INSTRUCTIONS.format(key=key)},
        {"name": "Incident Comms!", "description": "x", "instructions": INSTRUCTIONS},
        {"name": "tiny", "description": "Too short", "instructions": "Do it."},
    ]))

    assert not proposed.is_error, _text(proposed)
    draft_id = proposed.structured_content["id"]
    assert proposed.structured_content["cards_in_slack"] == 1
    assert bad_name.is_error and too_short.is_error and "120" in _text(too_short)
    draft = harness.thoth.drafts.get(draft_id)
    assert draft.state == "pending" and draft.proposed_by == "slack:U1"
    assert key not in draft.body and "[REDACTED:github-token]" in draft.body
    assert [d.id for d in harness.thoth.drafts.list()] == [draft_id]

    card = next(m for m in harness.slack.messages(FOUNDER) if draft_id in str(m))
    assert harness.event({"type": "reaction_added", "user": FOUNDER,
                          "reaction": "white_check_mark",
                          "item": {"type": "message", "channel": FOUNDER, "ts": card["ts"]},
                          "item_user": "UBOT"}) == 200
    # The skill is written to the brain first, then the draft is marked decided.
    wait_until(lambda: harness.thoth.drafts.get(draft_id).state == "accepted")
    skill = harness.thoth.skills.get("incident-comms")
    assert skill is not None and "incident lead" in skill.body and key not in skill.body
