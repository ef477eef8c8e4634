"""A team's tool that may change something, asked on a card in Slack (issue 51): signed
deliveries and clicks through the real Bolt app, the reference MCP server from npm."""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bridge.settings import Settings
from bridge.slack_api.tool_cards import ALLOW_ALWAYS, ALLOW_ONCE, DENY
from bridge.team_tools.grants import Grants
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import (
    CHANNEL,
    FOUNDER,
    Harness,
    running_bridge,
    serving,
)
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

TOGGLE = "everything__toggle-simulated-logging"


@pytest.fixture
def harness(model_settings: Settings, fake_anthropic: FakeAnthropic, tmp_path: Path,
            hashing_embedder: HashingEmbedder, everything: str) -> Iterator[Harness]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": everything, "args": ["stdio"], "readOnly": ["echo"]}}}))
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        mcp_config=config) as h:
        yield h


def _click(h: Harness, action_id: str, ask_id: str, card_ts: str, user: str) -> int:
    action = {
        "type": "block_actions", "team": {"id": "T1"}, "user": {"id": user, "team_id": "T1"},
        "api_app_id": "A1", "container": {"type": "message", "channel_id": CHANNEL,
                                          "message_ts": card_ts},
        "channel": {"id": CHANNEL}, "message": {"ts": card_ts},
        "actions": [{"action_id": action_id, "value": ask_id, "type": "button",
                     "block_id": f"team_tool_ask:{ask_id}"}],
        "trigger_id": "1.2.3", "response_url": "http://127.0.0.1:9/",
    }
    return h.post(urllib.parse.urlencode({"payload": json.dumps(action)}),
                  content_type="application/x-www-form-urlencoded")[0]


def _card(h: Harness, thread: str) -> tuple[str, str]:
    """The card asking in the thread: its ts and the ask it carries."""
    def found() -> dict[str, Any] | None:
        return next((m for m in h.replies_in(thread)
                     if any(b.get("type") == "actions" for b in m.get("blocks") or [])), None)

    card = wait_until(found)
    (buttons,) = [b for b in card["blocks"] if b.get("type") == "actions"]
    return str(card["ts"]), str(buttons["elements"][0]["value"])


def _asks(h: Harness) -> list[tuple[str, str]]:
    with h.thoth.db.read() as conn:
        return [(str(r[0]), str(r[1])) for r in conn.execute(
            "SELECT state, coalesce(decided_by, '') FROM tool_asks ORDER BY asked_at")]


def test_the_askers_allow_runs_the_call_and_the_conversation_goes_on(
    harness: Harness, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use(TOGGLE, {}), api.text("I asked you on a card."),
                        api.text("Logging is on now."))
    thread = "1700000100.000100"
    harness.mention("turn simulated logging on", thread)
    card_ts, ask_id = _card(harness, thread)
    card = harness.slack.message(CHANNEL, card_ts) or {}
    assert "toggle-simulated-logging" in json.dumps(card["blocks"])
    assert "Only <@U1> can allow it" in json.dumps(card["blocks"])
    # Whose rights it acts with is said on the card: the operator's key, not the asker's.
    assert "operator's key" in json.dumps(card["blocks"])
    # The model was told it waits, and the call has not run.
    wait_until(lambda: len(fake_anthropic.requests) == 2)
    told = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert told["is_error"] is True and "has not run" in told["content"]
    assert _asks(harness) == [("waiting", "")]

    # Someone else's click is refused where only they see it, and changes nothing.
    assert _click(harness, ALLOW_ONCE, ask_id, card_ts, "U2") == 200
    refusal = wait_until(lambda: harness.slack.ephemerals(CHANNEL))
    assert "Only <@U1> can allow this call" in refusal[0]["text"]
    assert _asks(harness) == [("waiting", "")]

    assert _click(harness, ALLOW_ONCE, ask_id, card_ts, "U1") == 200
    wait_until(lambda: len(fake_anthropic.requests) == 3)
    going_on = fake_anthropic.requests[2].body["messages"][-1]["content"]
    answered = next(block["text"] for block in going_on
                    if "<answered-tool-call>" in block.get("text", ""))
    assert "allowed everything__toggle-simulated-logging, and it ran" in answered
    assert _asks(harness) == [("allowed", "U1")]
    updated = wait_until(lambda: "allowed it once" in json.dumps(
        (harness.slack.message(CHANNEL, card_ts) or {}).get("blocks")) and
        harness.slack.message(CHANNEL, card_ts))
    assert not any(b.get("type") == "actions" for b in updated["blocks"])
    wait_until(lambda: any("Logging is on now." in json.dumps(m)
                           for m in harness.replies_in(thread)))

    # A click replayed finds it answered, and runs nothing again.
    assert _click(harness, ALLOW_ONCE, ask_id, card_ts, "U1") == 200
    wait_until(lambda: any("answered already" in e["text"]
                           for e in harness.slack.ephemerals(CHANNEL)))
    assert len(fake_anthropic.requests) == 3
    calls = [e for e in harness.thoth.audit.entries(action="tool") if e.action == "tool.call"]
    assert [(e.actor, e.target) for e in calls] == [("slack:U1", TOGGLE)]
    assert "allowed by U1 on a card" in calls[0].detail
    assert "with the operator's key" in calls[0].detail


def test_deny_tells_the_model_and_a_founder_may_deny_too(
    harness: Harness, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use(TOGGLE, {}), api.text("Asked."), api.text("Understood."))
    thread = "1700000200.000100"
    harness.mention("toggle logging", thread)
    card_ts, ask_id = _card(harness, thread)
    assert _click(harness, DENY, ask_id, card_ts, FOUNDER) == 200
    wait_until(lambda: len(fake_anthropic.requests) == 3)
    going_on = json.dumps(fake_anthropic.requests[2].body["messages"][-1]["content"])
    assert "denied everything__toggle-simulated-logging: it did not run" in going_on
    assert _asks(harness) == [("denied", FOUNDER)]
    assert not [e for e in harness.thoth.audit.entries(action="tool") if e.action == "tool.call"]


def test_always_allow_asks_no_more(harness: Harness, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.push(api.tool_use(TOGGLE, {}), api.text("Asked."), api.text("On."),
                        api.tool_use(TOGGLE, {}), api.text("Off, without asking."))
    thread = "1700000300.000100"
    harness.mention("toggle logging", thread)
    card_ts, ask_id = _card(harness, thread)
    assert _click(harness, ALLOW_ALWAYS, ask_id, card_ts, "U1") == 200
    wait_until(lambda: len(fake_anthropic.requests) == 3)
    other = "1700000400.000100"
    harness.mention("toggle it again", other)
    wait_until(lambda: len(fake_anthropic.requests) == 5)
    result = fake_anthropic.requests[4].body["messages"][-1]["content"][0]
    assert "is_error" not in result
    assert len(_asks(harness)) == 1  # no second card
    assert [(g.user, g.server, g.tool) for g in Grants(harness.thoth.db).of_person(
        "T1", "U1")] == [("U1", "everything", "toggle-simulated-logging")]


def test_a_lapsed_ask_runs_nothing(harness: Harness, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.push(api.tool_use(TOGGLE, {}), api.text("Asked."))
    thread = "1700000500.000100"
    harness.mention("toggle logging", thread)
    card_ts, ask_id = _card(harness, thread)
    with harness.thoth.db.write() as conn:
        conn.execute("UPDATE tool_asks SET expires_at = 0")
    assert _click(harness, ALLOW_ONCE, ask_id, card_ts, "U1") == 200
    wait_until(lambda: any("lapsed" in e["text"] for e in harness.slack.ephemerals(CHANNEL)))
    assert _asks(harness) == [("expired", "")]
    assert "No one answered in 30 minutes" in json.dumps(
        (harness.slack.message(CHANNEL, card_ts) or {}).get("blocks"))
    assert len(fake_anthropic.requests) == 2


@contextmanager
def _another_replica(h: Harness, embedder: HashingEmbedder) -> Iterator[Harness]:
    """A second ``thoth serve`` on the same database and Slack, as behind a load balancer."""
    with serving(h.thoth.settings, embedder) as (thoth, bridge, url):
        yield dataclasses.replace(h, thoth=thoth, bridge=bridge, url=url)


def test_the_click_is_taken_by_another_replica_than_the_one_that_asked(
    harness: Harness, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> None:
    fake_anthropic.push(api.tool_use(TOGGLE, {}), api.text("Asked."),
                        api.text("Done, from the other replica."))
    thread = "1700000600.000100"
    harness.mention("toggle logging", thread)
    card_ts, ask_id = _card(harness, thread)
    wait_until(lambda: len(fake_anthropic.requests) == 2)
    with _another_replica(harness, hashing_embedder) as other:
        assert _click(other, ALLOW_ONCE, ask_id, card_ts, "U1") == 200
        wait_until(lambda: len(fake_anthropic.requests) == 3)
        wait_until(lambda: any("Done, from the other replica." in json.dumps(m)
                               for m in harness.replies_in(thread)))
        # The first replica never ran it: the second did, and said so on the card.
        assert _click(harness, ALLOW_ONCE, ask_id, card_ts, "U1") == 200
        wait_until(lambda: any("answered already" in e["text"]
                               for e in harness.slack.ephemerals(CHANNEL)))
    calls = [e for e in harness.thoth.audit.entries(action="tool") if e.action == "tool.call"]
    assert len(calls) == 1 and _asks(harness) == [("allowed", "U1")]
    assert len(fake_anthropic.requests) == 3
