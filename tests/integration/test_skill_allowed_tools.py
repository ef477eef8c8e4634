"""A skill's ``allowed-tools`` (the Agent Skills field) pre-approves the team's tools it
names while the skill is in use in a turn (issue 51): approved by the founders with the
rest of the skill, never before it is loaded, never beyond the tools it names."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.app import Thoth, build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.procedural.skills import split_front_matter
from layers.shared.errors import BadInput
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

PLACE = Place("T1", "C1", "public", None, "general")
TOGGLE = "everything__toggle-simulated-logging"
BODY = ("# Noisy logs\n\n1. Turn simulated logging on with the everything server.\n"
        "2. Read what it logs.\n3. Turn it off again when done.\n")


@pytest.fixture
def app(model_settings: Settings, tmp_path: Path, everything: str,
        hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": everything, "args": ["stdio"], "readOnly": ["echo"]}}}))
    thoth = build(model_settings.model_copy(update={"mcp_config": config}),
                  embedder=hashing_embedder)
    yield thoth
    thoth.close()


def _turn(app: Thoth, text: str) -> TurnOutcome:
    async def run() -> TurnOutcome:
        outcome = await app.pipeline.handle(Turn("s1", text, PLACE, user="U1"), RecordingSink())
        await app.pipeline.drain(10)
        assert app.team_tools is not None
        await app.team_tools.aclose()
        return outcome

    return asyncio.run(run())


def test_a_skill_in_use_lets_its_allowed_tools_run_without_asking(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    draft = app.drafts.propose("noisy-logs", "Watch simulated logs", BODY,
                               allowed_tools=(TOGGLE,))
    app.drafts.approve(draft.id, by="U_FOUNDER")
    installed = app.skills.get("noisy-logs")
    assert installed is not None and installed.allowed_tools == (TOGGLE,)
    front, _ = split_front_matter((installed.path / "SKILL.md").read_text())
    assert front["allowed-tools"] == TOGGLE
    fake_anthropic.push(
        api.tool_use(TOGGLE, {}),                                  # before the skill: refused
        api.tool_use("get_skill", {"name": "noisy-logs"}),
        api.tool_use(TOGGLE, {}),                                  # in use: runs
        api.tool_use("everything__toggle-subscriber-updates", {}),  # not named: refused
        api.text("Done."))
    outcome = _turn(app, "watch the logs for a bit")
    assert outcome.ok
    results = [request.body["messages"][-1]["content"][0]
               for request in fake_anthropic.requests[1:]]
    assert results[0]["is_error"] is True and "a person must allow it" in results[0]["content"]
    assert "is_error" not in results[1]  # the skill loaded
    assert "is_error" not in results[2]  # its allowed tool ran
    assert results[3]["is_error"] is True
    (call,) = [e for e in app.audit.entries(action="tool") if e.action == "tool.call"]
    assert "pre-approved by the skill noisy-logs" in call.detail


def test_allowed_tools_must_name_team_tools(app: Thoth) -> None:
    with pytest.raises(BadInput, match="SERVER__tool or SERVER__\\*"):
        app.drafts.propose("bad-tools", "Bad", BODY, allowed_tools=("Bash(rm:*)",))
