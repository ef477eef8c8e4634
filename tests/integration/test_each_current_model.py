"""`thoth chat`, a tool-using turn and `/done`'s full reflection, on each current model.

The loopback Messages API answers each model as its row of ``models.json`` says the real
API does: thinking first (empty text, a signature) on the models that always think,
words between tool calls inside thinking, a 400 for a forced tool where the model
refuses one and for a tool round whose thinking did not come back whole. Every request
of each run must be taken: one refusal is a turn or a reflection the person would lose.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.model.catalogue import CATALOGUE
from tests.integration.test_cli_chat import _env
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic, RecordedRequest

pytestmark = pytest.mark.model

REPORT = {
    "outcome": "success",
    "what_worked": "the deploy day was found in memory",
    "memory_notes": ["Deploys happen on Fridays"],
    "persona_observations": [],
}
# Opus 5.5 and Sonnet 5.5 refuse a forced tool; Haiku 5.5 and Opus 4.8 take one; Fable
# 5.2 is the newest and refuses one too.
MODELS = ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-fable-5-2",
          "claude-opus-4-8"]


def _run_chat(home: Path, fake: FakeAnthropic, model: str) -> subprocess.CompletedProcess[str]:
    env = _env(home, fake)
    env.update(THOTH_MODEL=model, THOTH_REFLECTION_MODEL=model)
    return subprocess.run(
        [sys.executable, "-m", "bridge", "chat"],
        cwd=home.parent, env=env, input="When do we deploy?\n/done\n",
        capture_output=True, text=True, timeout=180,
    )


def _turn_and_reflection(requests: list[RecordedRequest]) -> tuple[list[dict[str, Any]],
                                                                   list[dict[str, Any]]]:
    turns = [r.body for r in requests if not r.body.get("tool_choice")]
    reflections = [r.body for r in requests if r.body.get("tool_choice")]
    return turns, reflections


@pytest.mark.parametrize("model", MODELS)
def test_a_tool_turn_and_a_reflection_succeed_on_each_current_model(
    tmp_path: Path, fake_anthropic: FakeAnthropic, model: str
) -> None:
    row = CATALOGUE.capabilities(model)
    reflection_replies = [api.tool_use("report_reflection", REPORT)]
    if not row.forced_tool_choice:
        # Offered the tool but not forced, the model first answers in prose: asked once more.
        reflection_replies.insert(0, api.text("The session went well; deploys are Fridays."))
    fake_anthropic.push(
        api.tool_use("recall", {"query": "deploy day"}, preface="Let me check."),
        api.text("We deploy on Fridays."),
        *reflection_replies,
    )
    home = tmp_path / "home"
    done = _run_chat(home, fake_anthropic, model)

    assert done.returncode == 0, done.stderr
    assert fake_anthropic.refusals == []
    assert "We deploy on Fridays." in done.stdout
    assert "outcome: success" in done.stdout, done.stdout
    turns, reflections = _turn_and_reflection(fake_anthropic.requests)
    first_round, second_round = turns
    # Thinking and effort as the model takes them.
    assert ("thinking" in first_round) == row.thinks
    assert first_round.get("output_config", {}).get("effort") == row.effort_for("medium")
    # max_tokens holds thinking and the longest reply where the model thinks.
    assert (first_round["max_tokens"] > 4_000) == row.thinks
    # The tool round sent the assistant's blocks back whole, thinking first where it thinks.
    echoed = [b["type"] for b in second_round["messages"][-2]["content"]]
    spoken = ["thinking", "thinking", "tool_use"] if row.thinks else ["text", "tool_use"]
    assert echoed == spoken
    # Reflection: forced where the model takes it, else offered and asked once more.
    expected_choice = ({"type": "tool", "name": "report_reflection"} if row.forced_tool_choice
                       else {"type": "auto"})
    assert [r["tool_choice"] for r in reflections] == [expected_choice] * len(
        reflection_replies)
    assert reflections[-1].get("output_config", {}).get("effort") == row.effort_for("high")
    with sqlite3.connect(home / "thoth.db") as conn:
        (state, report), = conn.execute("SELECT state, report FROM reflections").fetchall()
        transcript = [row[0] for row in conn.execute("SELECT reply_text FROM transcript_turns")]
    assert state == "done" and json.loads(report)["memory_notes"] == REPORT["memory_notes"]
    # Thinking is never stored: the transcript keeps the reply's words only (on a model
    # that does not think, the words before the tool call are part of them).
    said = "We deploy on Fridays." if row.thinks else "Let me check.\n\nWe deploy on Fridays."
    assert transcript == [said]
