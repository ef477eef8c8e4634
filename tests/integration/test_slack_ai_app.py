"""Thoth as a Slack AI app: the assistant pane's events, suggested prompts, thread titles,
feedback buttons under replies and task steps in the stream."""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any

from layers.episodic.episode import Episode, Feedback
from tests.integration.slack_harness import CHANNEL, Harness, streamed_text
from tests.servers import anthropic_api as api
from tests.waiting import wait_until

DM = "D1"


def _pane_event(harness: Harness, kind: str, thread_ts: str, looking_at: str | None) -> int:
    context = {"channel_id": looking_at, "team_id": "T1"} if looking_at else {}
    return harness.event({
        "type": kind,
        "assistant_thread": {"user_id": "U1", "context": context, "channel_id": DM,
                             "thread_ts": thread_ts},
        "event_ts": f"{time.time():.6f}",
    })


def _dm(harness: Harness, text: str, ts: str, thread_ts: str) -> int:
    return harness.event({"type": "message", "channel": DM, "channel_type": "im", "user": "U1",
                          "text": text, "ts": ts, "thread_ts": thread_ts, "team": "T1"})


def _episode(text: str, channel: str, kind: Any, user: str = "U1") -> Episode:
    return Episode(id=f"ep-{channel}-{user}", user_text=text, summary="", team="T1",
                   created_at=time.time() - 60, channel=channel, channel_type=kind, user=user,
                   user_name="dana")


def test_a_new_pane_thread_gets_prompts_from_what_the_person_may_see(harness: Harness) -> None:
    harness.slack.add_channel(DM, "", kind="im")
    harness.thoth.episodic.remember([
        _episode("the quarterly roadmap review", DM, "im"),
        _episode("ari's salary band question", "C7", "private", user="U1"),
        _episode("someone else's DM about visas", "D2", "im", user="U2"),
    ])
    assert _pane_event(harness, "assistant_thread_started", "1700002000.000100", None) == 200
    (suggested,) = wait_until(lambda: harness.slack.suggested_prompts())
    titles = [p["title"] for p in suggested["prompts"]]
    assert 1 <= len(titles) <= 4
    assert any("quarterly roadmap" in title for title in titles)
    assert not any("salary" in title or "visas" in title for title in titles)


def test_the_pane_context_widens_recall_to_the_channel_being_looked_at(
    harness: Harness,
) -> None:
    harness.slack.add_channel(DM, "", kind="im")
    harness.slack.add_channel("C7", "billing", kind="private", members=["UBOT", "U1"])
    harness.thoth.episodic.remember([
        _episode("the incident review of the billing outage", "C7", "private"),
        _episode("the incident review of the hiring plan", "C8", "private"),
    ])
    thread = "1700002100.000100"
    _pane_event(harness, "assistant_thread_started", thread, None)
    _pane_event(harness, "assistant_thread_context_changed", thread, "C7")
    wait_until(lambda: harness.bridge.stores.contexts.find(DM, thread))
    harness.model.push(api.text("Here is what I found."))
    _dm(harness, "what came out of the incident review?", "1700002100.000200", thread)
    (request,) = harness.model.wait_for_requests(1)
    related = next(t for t in request.context_texts() if t.startswith("<related-episodes>"))
    assert "billing outage" in related  # C7: the channel the person is looking at
    assert "hiring plan" not in related  # C8: private, and not in view
    (title,) = wait_until(lambda: harness.slack.titles())
    assert title == {"channel_id": DM, "thread_ts": thread,
                     "title": "what came out of the incident review?"}

    # Looking at a private channel they are not in (Slack lists its members) widens nothing.
    wait_until(lambda: harness.thoth.episodic.store.count() == 3)  # the turn's own episode
    harness.slack.add_channel("C9", "hr-exits", kind="private", members=["UBOT", "U2"])
    harness.thoth.episodic.remember([_episode("the incident review of exits", "C9", "private")])
    _pane_event(harness, "assistant_thread_context_changed", thread, "C9")
    wait_until(lambda: getattr(harness.bridge.stores.contexts.find(DM, thread), "channel", None)
               == "C9")
    _dm(harness, "recall incident review", "1700002100.000300", thread)
    answer = wait_until(lambda: [m["text"] for m in harness.slack.messages(DM)
                                 if "incident review" in m.get("text", "")])
    assert "exits" not in answer[0] and "billing" not in answer[0]


def _viewing(channel: str) -> dict[str, Any]:
    """An agent-view context, as Slack sends it: entities ordered by relevance."""
    return {"entities": [{"type": "slack#/types/channel_id", "value": channel, "team_id": "T1"}]}


def test_the_agent_view_context_widens_recall_as_the_older_pane_does(harness: Harness) -> None:
    harness.slack.add_channel(DM, "", kind="im")
    harness.slack.add_channel("C7", "billing", kind="private", members=["UBOT", "U1"])
    harness.slack.add_channel("C9", "hr-exits", kind="private", members=["UBOT", "U2"])
    harness.thoth.episodic.remember([
        _episode("the incident review of the billing outage", "C7", "private"),
        _episode("the incident review of the hiring plan", "C8", "private"),
        _episode("the incident review of exits", "C9", "private"),
    ])
    contexts = harness.bridge.stores.contexts
    # app_context_changed as Slack's reference shows it: the person in the envelope only.
    assert harness.event({"type": "app_context_changed", "context": _viewing("C7")},
                         authorizations=[{"team_id": "T1", "user_id": "UBOT", "is_bot": True},
                                         {"team_id": "T1", "user_id": "U1", "is_bot": False}]
                         ) == 200
    wait_until(lambda: getattr(contexts.find_app_context("T1", "U1"), "channel", None) == "C7")
    harness.model.push(api.text("Here is what I found."))
    _dm(harness, "what came out of the incident review?", "1700002300.000100",
        "1700002300.000100")
    (request,) = harness.model.wait_for_requests(1)
    related = next(t for t in request.context_texts() if t.startswith("<related-episodes>"))
    assert "billing outage" in related  # C7: in view, and they are in it
    assert "hiring plan" not in related and "exits" not in related

    # A message that carries its own app_context: a channel they are not in widens nothing.
    wait_until(lambda: harness.thoth.episodic.store.count() == 4)
    assert harness.event({"type": "message", "channel": DM, "channel_type": "im", "user": "U1",
                          "text": "recall incident review", "ts": "1700002300.000200",
                          "team": "T1", "app_context": _viewing("C9")}) == 200
    wait_until(lambda: getattr(contexts.find_app_context("T1", "U1"), "channel", None) == "C9")
    answer = wait_until(lambda: [m["text"] for m in harness.slack.messages(DM)
                                 if "incident review" in m.get("text", "")
                                 and m.get("thread_ts") == "1700002300.000200"])
    assert "exits" not in answer[0] and "billing" not in answer[0]

    # Opening the Messages tab with a context keeps it too (prompts are drawn with it).
    harness.event({"type": "app_home_opened", "user": "U1", "channel": DM, "tab": "messages",
                   "context": _viewing("C7"), "event_ts": f"{time.time():.6f}"})
    wait_until(lambda: getattr(contexts.find_app_context("T1", "U1"), "channel", None) == "C7")


def test_feedback_buttons_count_as_feedback_and_a_second_click_takes_it_back(
    harness: Harness,
) -> None:
    root = "1700002200.000100"
    harness.model.push(api.text("Use the staging runbook."))
    harness.mention("how do I reset staging?", root)
    reply_ts, episode_id = harness.answered(root)
    (stop,) = harness.slack.calls("chat.stopStream")
    (block,) = stop.field("blocks")
    assert block["type"] == "context_actions"
    assert block["elements"][0]["type"] == "feedback_buttons"
    store = harness.thoth.episodic.store

    def click(value: str, user: str = "U2") -> int:
        payload = {
            "type": "block_actions", "team": {"id": "T1", "domain": "test"},
            "user": {"id": user, "username": "ari", "team_id": "T1"}, "api_app_id": "A1",
            "container": {"type": "message", "message_ts": reply_ts, "channel_id": CHANNEL,
                          "is_ephemeral": False, "thread_ts": root},
            "channel": {"id": CHANNEL, "name": "general"},
            "message": {"type": "message", "ts": reply_ts, "thread_ts": root},
            "actions": [{"type": "feedback_buttons", "action_id": "reply_feedback",
                         "block_id": "fb", "value": value, "action_ts": f"{time.time():.6f}",
                         "text": {"type": "plain_text", "text": "Helpful"}}],
            "trigger_id": "1.2.3", "response_url": harness.slack.response_url(),
        }
        body = urllib.parse.urlencode({"payload": json.dumps(payload)})
        return harness.post(body, content_type="application/x-www-form-urlencoded")[0]

    assert click("helpful") == 200
    wait_until(lambda: store.get(episode_id).feedback == Feedback.WORKED)  # type: ignore[union-attr]
    thanks = wait_until(lambda: harness.slack.ephemerals(CHANNEL))
    assert thanks[0]["thread_ts"] == root
    click("not_helpful")
    wait_until(lambda: store.get(episode_id).feedback == Feedback.DID_NOT_WORK)  # type: ignore[union-attr]
    click("not_helpful")  # the same button again: taken back
    wait_until(lambda: store.get(episode_id).feedback == Feedback.NONE)  # type: ignore[union-attr]
    harness.reaction("white_check_mark", reply_ts)  # a reaction still counts beside it
    wait_until(lambda: store.get(episode_id).feedback == Feedback.WORKED)  # type: ignore[union-attr]


def test_searching_memory_and_loading_a_skill_show_as_tasks_in_the_stream(
    harness: Harness,
) -> None:
    root = "1700002300.000100"
    harness.model.push(
        api.tool_use("recall", {"query": "release checklist"}),
        api.text("Here is the checklist."),
    )
    harness.mention("what is on the release checklist?", root)
    wait_until(lambda: streamed_text(harness, root))
    chunks = [chunk for call in harness.slack.calls() if call.method.endswith("Stream")
              for chunk in call.field("chunks") or []]
    tasks = [(c["title"], c["status"]) for c in chunks if c["type"] == "task_update"]
    assert ("Searching memory", "in_progress") in tasks
    assert ("Searching memory", "complete") in tasks
    assert tasks.count(("Searching memory", "in_progress")) == 2  # context, then the tool
    assert streamed_text(harness, root).endswith("Here is the checklist.")


def test_opening_the_agents_messages_tab_offers_prompts_for_the_channel(
    harness: Harness,
) -> None:
    harness.slack.add_channel(DM, "", kind="im")
    harness.thoth.episodic.remember([_episode("the vendor contract renewal", DM, "im")])
    harness.event({"type": "app_home_opened", "user": "U1", "channel": DM, "tab": "home",
                   "event_ts": f"{time.time():.6f}"})
    harness.event({"type": "app_home_opened", "user": "U1", "channel": DM, "tab": "messages",
                   "event_ts": f"{time.time():.6f}"})
    (suggested,) = wait_until(lambda: harness.slack.suggested_prompts())
    assert suggested["thread_ts"] is None and suggested["channel_id"] == DM
    assert any("vendor contract" in p["title"] for p in suggested["prompts"])
    assert len(harness.slack.suggested_prompts()) == 1  # the Home tab offers nothing
