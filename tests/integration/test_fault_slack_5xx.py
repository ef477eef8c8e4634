"""Issue 55, fault 3: Slack answers 5xx, resets or times out on chat.postMessage,
chat.update and the streaming methods. The real async SDK client, built as ``thoth
serve`` builds it, against the loopback Slack taught to fail the ways Slack does (did it
then answered 5xx, reset before or after doing it, a standing window, a hang past the
client's timeout): a reply shows once, whole, or the turn is told it was not delivered;
a card's edit is made when Slack is back; /health's registry says Slack was failing and
is not any more."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import Any

import pytest
from pydantic import SecretStr
from slack_sdk.errors import SlackApiError

from bridge.settings import Settings
from bridge.slack.thread_reply import SlackSink
from bridge.slack_api import card_edits
from bridge.slack_api.clients import build_async_web_client, build_web_client
from bridge.slack_api.notifier import card_mark, post_card_once
from bridge.slack_api.slack_health import SlackHealth
from bridge.slack_api.sure_posts import REPLY_EVENT
from bridge.slack_api.workspace_client import WorkspaceClient
from layers.shared.dependency_health import SLACK, DependencyHealth
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import running_bridge, shown, streamed_text
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.waiting import wait_until

ROOT = "1700003000.000100"
WHOLE = "The first words. one two three four done."
QUIET_S = 0.3
POSTING = frozenset({"chat.postMessage", "chat.startStream", "chat.appendStream",
                     "chat.stopStream"})


def _fake() -> FakeSlack:
    slack = FakeSlack()
    slack.add_channel("C1", "general")
    slack.add_user("U1", "dana")
    slack.add_message("C1", "a question", ts=ROOT)
    return slack


def _client(settings: Settings, slack: FakeSlack, health: DependencyHealth, *,
            window_s: float = 20.0, quiet_s: float = QUIET_S) -> WorkspaceClient:
    client = build_async_web_client(settings.model_copy(update={
        "slack_bot_token": SecretStr("xoxb-test"), "slack_api_url": slack.url,
        "slack_timeout_s": 1.0, "slack_delivery_window_s": window_s}), health=health)
    # Slack counts as back once its calls answer and none fails for 0.3 s (5 s in service).
    client.health = SlackHealth(health, quiet_s=quiet_s)
    return client


async def _then_quiet(work: Awaitable[None], quiet_s: float = QUIET_S) -> None:
    """``work``, then long enough without a failure for Slack to count as back."""
    await work
    await asyncio.sleep(quiet_s * 2)


def _sink(client: WorkspaceClient) -> SlackSink:
    return SlackSink(client, channel="C1", thread_ts=ROOT, recipient_user="U1",
                     recipient_team="T1")


def _replies(slack: FakeSlack) -> list[dict[str, Any]]:
    return [m for m in slack.messages("C1", ROOT) if m.get("user") == "UBOT"]


def _answered_once(slack: FakeSlack, sink: SlackSink) -> dict[str, Any]:
    (reply,) = _replies(slack)
    assert shown(reply) == WHOLE
    assert sink.posted == [reply["ts"]] and not sink.undelivered
    return reply


@pytest.mark.parametrize("fault", ["500 after posting", "reset after posting",
                                   "timeout after posting"])
def test_a_post_slack_made_before_failing_is_not_posted_again(
        settings: Settings, fault: str) -> None:
    with _fake() as slack:
        if fault == "500 after posting":
            slack.fail_after_applying("chat.postMessage", status=500)
        elif fault == "reset after posting":
            slack.reset_next("chat.postMessage", applied=True)
        else:  # held past the client's 1 s, then made
            slack.delay_next("chat.postMessage", 1.2)
        health = DependencyHealth()
        sink = _sink(_client(settings, slack, health))
        asyncio.run(_then_quiet(sink.finish(WHOLE, ok=True)))

        reply = _answered_once(slack, sink)
        # Sent once: the thread was read for the reply's mark instead of posting again.
        assert len(slack.calls("chat.postMessage")) == 1
        (read,) = slack.calls("conversations.replies")
        assert str(read.args.get("include_all_metadata")).lower() in ("1", "true")
        assert reply["metadata"]["event_type"] == REPLY_EVENT
        assert not health.is_failing(SLACK)  # the read answered: Slack is back


def test_a_post_that_never_reached_slack_is_sent_again(settings: Settings) -> None:
    with _fake() as slack:
        slack.reset_next("chat.postMessage", applied=False)
        sink = _sink(_client(settings, slack, DependencyHealth()))
        asyncio.run(sink.finish(WHOLE, ok=True))
        _answered_once(slack, sink)
        assert len(slack.calls("chat.postMessage")) == 2


def test_a_stream_through_a_window_of_5xx_slack_applied_shows_the_reply_once(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    """Every posting and streaming call made, then answered 503, for 2.5 s: the start is
    found in the thread and taken up, the uncertain appends are not sent again, and the
    message is written whole at the end."""
    with _fake() as slack:
        health = DependencyHealth()
        # Quiet for longer than the reply's pause between tries (2 s): as in service
        # (5 s), one reply's failures are one outage, not one per try.
        sink = _sink(_client(settings, slack, health, quiet_s=2.5))
        failing_seen: list[bool] = []

        async def reply() -> None:
            slack.down_for(2.5, POSTING, how="5xx", status=503, applied=True)
            for word in ("The first words. ", "one ", "two ", "three ", "four ", "done."):
                await sink.stream(word)
                failing_seen.append(health.is_failing(SLACK))
                await asyncio.sleep(0.6)
            await _then_quiet(sink.finish(WHOLE, ok=True), 2.5)

        with caplog.at_level(logging.INFO):
            asyncio.run(reply())
        assert any(failing_seen)  # /health said degraded while Slack failed
        said = [r.getMessage() for r in caplog.records]
        # One line when Slack started failing, one when it was back: no flapping between.
        assert sum("slack is failing" in line for line in said) == 1
        assert sum("slack is back" in line for line in said) == 1
        reply_message = _answered_once(slack, sink)
        assert len(slack.calls("chat.startStream")) == 1  # never started twice
        stream = slack.stream("C1", reply_message["ts"])
        assert stream is not None and stream["state"] == "stopped"
        assert not health.is_failing(SLACK)


def test_a_stream_start_slack_did_not_make_is_started_again(settings: Settings) -> None:
    """A 503 that made nothing: the thread shows no start, so the stream starts again
    (once), and the words that waited go with it."""
    with _fake() as slack:
        slack.fail_next("chat.startStream", status=503)
        sink = _sink(_client(settings, slack, DependencyHealth()))

        async def reply() -> None:
            for word in ("The first words. ", "one ", "two ", "three ", "four ", "done."):
                await sink.stream(word)
                await asyncio.sleep(0.5)
            await sink.finish(WHOLE, ok=True)

        asyncio.run(reply())
        reply_message = _answered_once(slack, sink)
        assert len(slack.calls("chat.startStream")) == 2
        assert slack.stream("C1", reply_message["ts"]) is not None  # it did stream


def test_a_reply_posted_through_a_standing_window_of_resets_arrives_once(
        settings: Settings) -> None:
    with _fake() as slack:
        health = DependencyHealth()
        sink = _sink(_client(settings, slack, health))

        async def reply() -> None:
            slack.down_for(2.0, POSTING, how="reset", applied=False)
            await _then_quiet(sink.finish(WHOLE, ok=True))

        started = time.monotonic()
        asyncio.run(reply())
        assert time.monotonic() - started >= 1.5  # it waited for Slack, then went
        _answered_once(slack, sink)
        assert len(slack.calls("chat.postMessage")) >= 2  # each reset try looked first
        assert not health.is_failing(SLACK)


def test_a_reply_slack_never_takes_is_told_undelivered_in_one_line(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    with _fake() as slack:
        health = DependencyHealth()
        sink = _sink(_client(settings, slack, health, window_s=2.0))
        slack.down_for(30, POSTING, how="5xx", status=500)
        with caplog.at_level(logging.INFO):
            asyncio.run(sink.finish(WHOLE, ok=True))
        assert sink.undelivered and sink.posted == []
        assert _replies(slack) == []
        assert health.is_failing(SLACK)
        given_up = [r for r in caplog.records if "was not delivered" in r.getMessage()]
        assert len(given_up) == 1 and given_up[0].levelno == logging.ERROR
        assert not any(r.exc_info for r in caplog.records)  # no traceback floods


def test_the_sdk_sends_an_edit_again_after_a_timeout_but_never_a_post(
        settings: Settings) -> None:
    with _fake() as slack:
        client = _client(settings, slack, DependencyHealth())

        async def calls() -> None:
            posted = await client.chat_postMessage(channel="C1", thread_ts=ROOT, text="x")
            slack.delay_next("chat.update", 1.5)
            await client.chat_update(channel="C1", ts=posted["ts"], text="edited")
            slack.fail_next("chat.postMessage", status=503)
            with pytest.raises(SlackApiError):
                await client.chat_postMessage(channel="C1", thread_ts=ROOT, text="y")

        asyncio.run(calls())
        assert len(slack.calls("chat.update")) == 2  # timed out, sent again by the SDK
        assert len(slack.calls("chat.postMessage")) == 2  # the 503 was not retried


def test_a_card_edit_slack_fails_is_made_when_it_is_back(settings: Settings) -> None:
    with _fake() as slack:
        health = DependencyHealth()
        client = _client(settings, slack, health)

        async def decide() -> str:
            card = await client.chat_postMessage(channel="C1", text="Skill draft awaits")
            # Longer than the SDK's own two retries of an edit (0.5 s, then 1 s).
            slack.down_for(4.0, {"chat.update"}, how="5xx", status=502)
            await card_edits.edit_card(client, channel="C1", ts=card["ts"], what="a draft",
                                       text="Skill draft approved (older)")
            # A newer state of the same card while the first edit waits: it wins.
            await card_edits.edit_card(client, channel="C1", ts=card["ts"], what="a draft",
                                       text="Skill draft approved by Dana")
            assert card_edits.waiting() == 1 and health.is_failing(SLACK)
            for _ in range(200):
                if not card_edits.waiting():
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(QUIET_S * 2)
            return str(card["ts"])

        ts = asyncio.run(decide())
        card = slack.message("C1", ts)
        assert card is not None and card["text"] == "Skill draft approved by Dana"
        assert not health.is_failing(SLACK)


def test_a_delivery_while_slack_fails_is_answered_once_and_health_recovers(
        model_settings: Settings, fake_anthropic: FakeAnthropic,
        hashing_embedder: HashingEmbedder) -> None:
    """Through the real Bolt app: a mention while Slack makes each post and stream call,
    then answers 500, for 3 s. One reply, whole; the registry /health renders (``thoth
    serve`` hands it to its HTTP server; bench/fault_slack.py asks /health itself) says
    degraded meanwhile, ok after: the served client is the one ``build`` gave it."""
    fake_anthropic.push(api.text(WHOLE))
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        slack_timeout_s=1.0) as h:
        h.slack.down_for(3.0, POSTING, how="5xx", status=500, applied=True)
        assert h.mention("what did we decide?", "1700003100.000100") == 200
        wait_until(lambda: h.thoth.health.is_failing(SLACK))
        assert h.thoth.health.summary().startswith("degraded: slack (")
        text = wait_until(lambda: streamed_text(h, "1700003100.000100"), timeout_s=30)
        assert text == WHOLE
        wait_until(lambda: not h.thoth.health.is_failing(SLACK), timeout_s=20)
        assert h.thoth.health.summary() == "ok"
        assert len(h.replies_in("1700003100.000100")) == 1


def test_a_card_the_sync_client_posted_before_a_500_is_not_posted_again(
        settings: Settings) -> None:
    """The reflection child's cards (the sync client): found by their mark, not doubled."""
    with _fake() as slack:
        client = build_web_client(settings.model_copy(update={
            "slack_api_url": slack.url, "slack_timeout_s": 1.0}), token="xoxb-test")
        slack.fail_after_applying("chat.postMessage", status=500)
        ts, channel = post_card_once(client, channel="C1", thread_ts=ROOT,
                                     mark=card_mark("skill_draft", "d1"),
                                     text="Skill draft awaits approval")
        (card,) = _replies(slack)
        assert (ts, channel) == (card["ts"], "C1")
        assert len(slack.calls("chat.postMessage")) == 1
