"""With CONSOLE_URL set, Slack links each memory to its page in the console: /recall's
results and a memory note's card. Without it, no link is guessed."""

from __future__ import annotations

import re

from bridge.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import CHANNEL, running_bridge, shown
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

CONSOLE = "https://thoth.example"


def test_recall_results_and_note_cards_link_to_the_console(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> None:
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        console_url=CONSOLE + "/") as harness:
        ts = "1700000400.000100"
        harness.model.push(api.text("Blue-green, on Thursdays."))
        harness.mention("how should we deploy the staging api?", ts)
        reply_ts, episode_id = harness.answered(ts)
        status, _, _ = harness.command("/recall", "deploy the staging api")
        assert status == 200
        ephemeral = wait_until(lambda: [e for e in harness.slack.ephemerals(CHANNEL)
                                        if "console" in shown(e)])
        assert f"({CONSOLE}/console/episodes/{episode_id})" in shown(ephemeral[0])
        assert "open the thread" in shown(ephemeral[0])

        harness.reaction("brain", reply_ts)
        (note,) = wait_until(lambda: harness.thoth.notes.store.listed("proposed"))

        def card() -> str | None:
            return next((str(m.get("markdown_text") or m.get("text")) for m in
                         harness.replies_in(ts) if "Memory note proposed" in str(
                             m.get("markdown_text") or m.get("text"))), None)

        assert f"({CONSOLE}/console/notes/{note.id})" in wait_until(card)


def test_without_a_console_url_slack_shows_no_console_link(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> None:
    with running_bridge(model_settings, fake_anthropic, hashing_embedder) as harness:
        ts = "1700000500.000100"
        harness.model.push(api.text("Blue-green, on Thursdays."))
        harness.mention("how should we deploy the staging api?", ts)
        harness.answered(ts)
        harness.command("/recall", "deploy the staging api")
        ephemeral = wait_until(lambda: [e for e in harness.slack.ephemerals(CHANNEL)
                                        if "open the thread" in shown(e)])
        assert not re.search(r"/console", shown(ephemeral[0]))

