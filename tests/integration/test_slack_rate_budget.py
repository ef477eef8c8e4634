"""One rate budget per workspace and method (bridge/slack_api/rate_budget.py), with the real
async SDK client against the loopback Slack: a reply's updates gather while their method
waits out a 429, and its final answer goes once the wait is over."""

from __future__ import annotations

import asyncio
import time

from bridge.slack.thread_reply import SlackSink
from bridge.slack_api.rate_budget import (
    BudgetedAsyncWebClient,
    BudgetKey,
    RateBudget,
    SharedRateLimitRetryHandler,
    budget_for,
    budget_key,
)
from tests.integration.slack_harness import shown
from tests.servers.slack_api import FakeSlack

ROOT = "1700002000.000100"
WHOLE = "The first words. one two three four done."


def _client(slack: FakeSlack) -> BudgetedAsyncWebClient:
    return BudgetedAsyncWebClient(
        token="xoxb-test", base_url=slack.url,
        retry_handlers=[SharedRateLimitRetryHandler(slack.url, max_retry_count=3)])


def test_updates_gather_while_their_method_waits_and_the_final_answer_goes() -> None:
    with FakeSlack() as slack:
        slack.add_channel("C1", "general")
        slack.add_user("U1", "dana")
        budget = budget_for(slack.url, "xoxb-test")

        waited: list[float] = []

        async def reply() -> float:
            sink = SlackSink(_client(slack), channel="C1", thread_ts=ROOT,
                             recipient_user="U1", recipient_team="T1")
            await sink.stream("The first words. ")  # starts the stream
            # Another conversation was told to wait: this one's appends wait too.
            budget.hold(budget_key("chat.appendStream", None), 1.5)
            held_at = time.monotonic()
            for word in ("one ", "two ", "three ", "four ", "done."):
                started = time.monotonic()
                await sink.stream(word)
                waited.append(time.monotonic() - started)
                await asyncio.sleep(0.3)
            await sink.finish(WHOLE, ok=True)
            return held_at

        held_at = asyncio.run(reply())
        # The model's words never waited behind the hold: they gathered.
        assert max(waited) < 0.3
        appends = slack.calls("chat.appendStream")
        # Nothing was sent inside the wait; after it, one call carried what gathered.
        assert all(call.received_at >= held_at + 1.5 for call in appends)
        assert len(appends) <= 1
        (message,) = [m for m in slack.messages("C1", ROOT) if m.get("user") == "UBOT"]
        stream = slack.stream("C1", message["ts"])
        assert stream is not None and stream["state"] == "stopped"
        assert shown(message) == WHOLE  # the final answer, whole


def test_while_streaming_is_paced_after_a_429_a_reply_is_posted_whole() -> None:
    """A stream costs two Tier 2 calls (its start and its stop): while either is paced
    after a 429 (here, or told by another replica), a reply goes whole in one
    chat.postMessage instead of waiting its turn twice."""
    with FakeSlack() as slack:
        slack.add_channel("C1", "general")
        slack.add_user("U1", "dana")
        budget = budget_for(slack.url, "xoxb-test")

        async def reply(thread: str) -> None:
            sink = SlackSink(_client(slack), channel="C1", thread_ts=thread,
                             recipient_user="U1", recipient_team="T1")
            await sink.stream("The first words. ")
            await sink.finish(WHOLE, ok=True)

        asyncio.run(reply(ROOT))
        assert len(slack.calls("chat.startStream")) == 1  # nothing paced: it streams
        # Another replica was told to wait on chat.stopStream: a wait already over, its
        # paced minute begun.
        budget.hold(budget_key("chat.stopStream", None), 0.0, told_by="replica-2")
        asyncio.run(reply("1700002000.000200"))
        assert len(slack.calls("chat.startStream")) == 1
        (posted,) = [m for m in slack.messages("C1", "1700002000.000200")
                     if m.get("user") == "UBOT"]
        assert shown(posted) == WHOLE


def test_a_429_holds_the_method_for_every_client_of_the_workspace() -> None:
    with FakeSlack() as slack:
        slack.add_channel("C1", "general")
        budget = budget_for(slack.url, "xoxb-test")
        slack.fail_next("chat.getPermalink", status=429, retry_after=1)

        async def two_conversations() -> None:
            first, second = _client(slack), _client(slack)
            asked = asyncio.create_task(
                first.chat_getPermalink(channel="C1", message_ts=ROOT))
            await asyncio.sleep(0.2)  # the 429 is in: the method is held
            assert budget.held_for(budget_key("chat.getPermalink", None)) > 0.5
            await second.chat_getPermalink(channel="C1", message_ts=ROOT)
            await asked

        asyncio.run(two_conversations())
        refused, *after = slack.calls("chat.getPermalink")
        # Neither client called again before Retry-After (and the margin) was over.
        assert len(after) == 2
        assert all(call.received_at - refused.received_at >= 1.0 for call in after)


def _three_at_once(budget: RateBudget, key: BudgetKey, hold_s: float,
                   told_by: str | None = None) -> list[float]:
    """When each of three calls waiting out a hold went, from the hold."""
    async def three() -> list[float]:
        budget.hold(key, hold_s, told_by=told_by)
        started = time.monotonic()

        async def call() -> float:
            await budget.wait_turn(key)
            return time.monotonic() - started

        return sorted(await asyncio.gather(call(), call(), call()))

    return asyncio.run(three())


def test_after_a_wait_the_calls_that_waited_go_one_at_a_time_at_the_methods_pace() -> None:
    budget = budget_for("http://pace.invalid/api/", "xoxb-pace")
    key = budget_key("chat.postMessage", {"channel": "C1"})  # one a second, per channel
    went = _three_at_once(budget, key, 0.2)
    # The first goes when the wait is over; each next one a second (and a margin) later.
    assert 0.2 <= went[0] < 1.0
    assert went[1] - went[0] >= 1.0 and went[2] - went[1] >= 1.0
    # Another channel's posts are not paced by this one's 429.
    assert budget.delay_for(budget_key("chat.postMessage", {"channel": "C2"})) == 0


def test_a_429_the_sdk_retries_holds_the_channel_it_was_for() -> None:
    """chat.postMessage's limit is per channel: the SDK's retry of its 429 must hold that
    channel (its retry request carries no JSON body to read the channel from)."""
    with FakeSlack() as slack:
        slack.add_channel("C1", "general")
        slack.fail_next("chat.postMessage", status=429, retry_after=1)
        budget = budget_for(slack.url, "xoxb-test")

        async def post_while_watching() -> tuple[float, float]:
            posting = asyncio.create_task(
                _client(slack).chat_postMessage(channel="C1", text="hello"))
            await asyncio.sleep(0.4)  # the 429 came back; the retry waits
            held = budget.delay_for(budget_key("chat.postMessage", {"channel": "C1"}))
            other = budget.delay_for(budget_key("chat.postMessage", {"channel": "C2"}))
            await posting
            return held, other

        held, other = asyncio.run(post_while_watching())
        assert held > 0.3 and other == 0


def test_a_wait_another_replica_shared_slows_this_ones_pace_to_their_share() -> None:
    budget = budget_for("http://pace.invalid/api/", "xoxb-shared")
    key = budget_key("chat.postEphemeral", None)  # Tier 4: 100 a minute
    went = _three_at_once(budget, key, 0.1, told_by="replica-2")
    # Two replicas pacing: each at half of 100 a minute (1.2 s apart, not 0.6).
    assert went[1] - went[0] >= 1.2 and went[2] - went[1] >= 1.2
