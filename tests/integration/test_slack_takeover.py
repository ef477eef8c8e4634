"""A delivery a dead replica had acknowledged is answered by a living one, in its
thread's order (the inbox, ``bridge/slack/inbox.py``), over the real bridge."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from bridge.slack.bolt_app import MESSAGE, message_payload, take_over
from bridge.slack.delivery_order import DeliveryOrder
from bridge.slack.events import Incoming
from bridge.slack.inbox import SlackInbox
from bridge.slack.replies import ReplyRecord
from bridge.slack_api.clients import build_web_client
from layers.shared.offloaded import Offloaded
from tests.integration.slack_harness import CHANNEL, Harness, streamed_text
from tests.servers import anthropic_api as api
from tests.waiting import wait_until

GITHUB_TOKEN = "ghp_" + "R7x2kQ9mZp4LwT8vN3bY6cH1dF5gJ0sA2eK9"


def _left_by_a_dead_replica(harness: Harness, text: str, ts: str, thread: str) -> None:
    """What a replica killed right after acknowledging a message leaves: its inbox row,
    whose lease has run out."""
    incoming = Incoming("T1", CHANNEL, "U1", text, ts, thread, f"EvDead{ts}", "channel")
    dead = SlackInbox(harness.thoth.db, owner="dead-host:1:abc", lease_s=0)
    assert dead.take((f"event:{incoming.event_id}",), lane=incoming.session_key, kind=MESSAGE,
                     payload=message_payload(incoming))


def test_a_message_a_dead_replica_took_is_answered_before_the_next_in_its_thread(
    harness: Harness,
) -> None:
    thread = "1700009000.000100"
    _left_by_a_dead_replica(harness, f"keep {GITHUB_TOKEN} safe, what is it for?", thread, thread)
    harness.model.push(api.text("first answer"), api.text("second answer"))
    # The next message of that thread reaches this replica before the takeover:
    # it waits for the dead replica's message, taken earlier.
    assert harness.mention("and then?", "1700009000.000300", thread_ts=thread) == 200
    wait_until(lambda: SlackInbox(harness.thoth.db, owner="r", lease_s=1).waiting() == 2)
    assert harness.model.requests == []
    bridge = harness.bridge
    quick = SlackInbox(harness.thoth.db, owner=harness.thoth.leases.owner, lease_s=0.3)
    bridge.runner.keep_running(_lanes(harness, quick).keep(lambda entry: take_over(bridge, entry)))
    wait_until(lambda: len(harness.model.requests) == 2, 30)
    first, second = (r.conversation()[-1]["content"] for r in harness.model.requests)
    # Taken over from its stored text: redacted, so the token never reached the inbox.
    assert first.startswith("keep [REDACTED:") and GITHUB_TOKEN not in first
    assert second == "and then?"
    assert wait_until(lambda: streamed_text(harness, thread)) == "first answer"
    wait_until(lambda: quick_inbox_is_empty(harness))


def _lanes(harness: Harness, inbox: SlackInbox) -> DeliveryOrder:
    """The bridge's lanes over ``inbox``, whose leases run out quickly."""
    stores = dataclasses.replace(harness.bridge.stores, inbox=inbox)
    return DeliveryOrder(Offloaded(stores), lease_s=inbox.lease_s)


def quick_inbox_is_empty(harness: Harness) -> bool:
    return SlackInbox(harness.thoth.db, owner="reader", lease_s=1).waiting() == 0


def test_a_message_a_dead_replica_had_answered_is_not_answered_twice(
    harness: Harness,
) -> None:
    thread = "1700009100.000100"
    harness.model.push(api.text("the only answer"))
    assert harness.mention("hello", thread) == 200
    wait_until(lambda: streamed_text(harness, thread))
    # As if the replica that answered (and recorded the turn) died before marking the
    # message done.
    _left_by_a_dead_replica(harness, "hello", thread, thread)
    bridge = harness.bridge
    quick = SlackInbox(harness.thoth.db, owner=harness.thoth.leases.owner, lease_s=0.3)
    bridge.runner.keep_running(_lanes(harness, quick).keep(lambda entry: take_over(bridge, entry)))
    wait_until(lambda: quick.waiting() == 0, 30)
    assert len(harness.model.requests) == 1
    assert len(harness.replies_in(thread)) == 1


def test_a_reply_a_dead_replica_had_begun_is_replaced_by_the_whole_answer(
    harness: Harness,
) -> None:
    thread = "1700009200.000100"
    _left_by_a_dead_replica(harness, "what is our deploy day?", thread, thread)
    # The dead replica had begun its reply (recorded, as a reply is as soon as it exists).
    cut = build_web_client(harness.thoth.settings).chat_postMessage(
        channel=CHANNEL, thread_ts=thread, text="Deploys are on")
    harness.bridge.stores.replies.record(
        ReplyRecord(CHANNEL, str(cut["ts"]), "T1", thread, "dead-session", None, "U1"))
    harness.model.push(api.text("Deploys are on Fridays."))
    bridge = harness.bridge
    quick = SlackInbox(harness.thoth.db, owner=harness.thoth.leases.owner, lease_s=0.3)
    bridge.runner.keep_running(_lanes(harness, quick).keep(lambda entry: take_over(bridge, entry)))
    wait_until(lambda: quick.waiting() == 0)
    (only,) = harness.replies_in(thread)  # the cut one is gone
    assert only["ts"] != cut["ts"]
    assert streamed_text(harness, thread) == "Deploys are on Fridays."


def test_a_takeover_without_the_history_scope_still_replaces_the_reply_on_record(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    thread = "1700009300.000100"
    harness.slack.add_message(CHANNEL, "what is our deploy day?", user="U1", ts=thread)
    _left_by_a_dead_replica(harness, "what is our deploy day?", thread, thread)
    cut = build_web_client(harness.thoth.settings).chat_postMessage(
        channel=CHANNEL, thread_ts=thread, text="Deploys are on")
    harness.bridge.stores.replies.record(
        ReplyRecord(CHANNEL, str(cut["ts"]), "T1", thread, "dead-session", None, "U1"))
    # Installed without channels:history: Slack will not show the thread to the bot.
    harness.slack.scopes = "chat:write,reactions:write,users:read,im:history"
    harness.model.push(api.text("Deploys are on Fridays."))
    bridge = harness.bridge
    quick = SlackInbox(harness.thoth.db, owner=harness.thoth.leases.owner, lease_s=0.3)
    with caplog.at_level(logging.INFO, logger="bridge.slack.conversation"):
        lanes = _lanes(harness, quick)
        bridge.runner.keep_running(lanes.keep(lambda entry: take_over(bridge, entry)))
        wait_until(lambda: quick.waiting() == 0)

    assert harness.slack.calls("conversations.replies")  # it asked, and was refused
    (only,) = harness.replies_in(thread)  # the reply on record is gone all the same
    assert only["ts"] != cut["ts"]
    assert streamed_text(harness, thread) == "Deploys are on Fridays."
    assert len(harness.model.requests) == 1  # answered once
    said = [r for r in caplog.records if r.name == "bridge.slack.conversation"
            and "could not be read" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING
    line = said[0].getMessage()
    assert "missing_scope: needs channels:history" in line and thread in line
    assert "\n" not in line and said[0].exc_info is None
