"""The App Home tab and the message shortcuts, through signed requests and the real SDK
against the loopback Slack (``views.publish`` refuses as Slack's method page says)."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any

from bridge import messages
from bridge.slack.app_home import FORGET_FACT, KEEP_NOTE
from bridge.slack.shortcuts import FORGET_THIS, REMEMBER_THIS
from layers.identity.protocol import Person
from layers.shared.places import Place
from tests.integration.slack_harness import CHANNEL, FOUNDER, Harness
from tests.servers import anthropic_api as api
from tests.waiting import wait_until


def _interaction(harness: Harness, payload: dict[str, Any]) -> int:
    status, _, _ = harness.post(urllib.parse.urlencode({"payload": json.dumps(payload)}),
                                content_type="application/x-www-form-urlencoded")
    return status


def _home_opened(harness: Harness, user: str) -> int:
    return harness.event({"type": "app_home_opened", "user": user, "channel": "D0HOME",
                          "tab": "home", "event_ts": "1700009999.000100"})


def _clicked(user: str, action_id: str, value: str) -> dict[str, Any]:
    return {"type": "block_actions", "team": {"id": "T1"},
            "user": {"id": user, "team_id": "T1"}, "api_app_id": "A1",
            "container": {"type": "view", "view_id": "V1"}, "trigger_id": "1.2.3",
            "view": {"id": "V1", "type": "home"},
            "actions": [{"action_id": action_id, "value": value, "type": "button",
                         "block_id": "b1"}]}


def _texts(view: dict[str, Any] | None) -> str:
    return json.dumps(view or {})


def test_the_home_tab_shows_what_thoth_knows_and_forgets_a_fact_on_a_click(
    harness: Harness,
) -> None:
    identity = harness.thoth.identity
    assert identity is not None
    dana = Person("T1", "U1")
    (fact_id,) = asyncio.run(identity.observe(dana, ["prefers tea over coffee"],
                                              session_id=None, source="test"))
    assert _home_opened(harness, "U1") == 200
    home = wait_until(lambda: harness.slack.home_of("U1"))
    assert "prefers tea over coffee" in _texts(home)
    assert FORGET_FACT in _texts(home) and KEEP_NOTE not in _texts(home)  # not a founder

    assert _interaction(harness, _clicked("U1", FORGET_FACT, fact_id)) == 200
    wait_until(lambda: "prefers tea" not in _texts(harness.slack.home_of("U1")))
    assert asyncio.run(identity.facts(dana, None)) == []
    (entry,) = harness.thoth.audit.entries(action="fact")
    assert (entry.actor, entry.origin) == ("slack:U1", "slack home")


def test_a_founder_keeps_a_waiting_note_from_the_home_tab_and_its_card_says_so(
    harness: Harness,
) -> None:
    note = harness.thoth.notes.propose(
        "Deploys need two approvals", Place("T1", CHANNEL, "public"), user="U1",
        author_name="dana", source="🧠 reaction", session_id=None, speakers=["U1"])
    from bridge.slack_api.clients import build_web_client
    from bridge.slack_api.note_cards import NoteCardStore, note_card_message

    posted = build_web_client(harness.thoth.settings).chat_postMessage(
        channel=CHANNEL, **note_card_message(note, None))
    NoteCardStore(harness.thoth.db).record(note.id, channel=CHANNEL, ts=str(posted["ts"]))
    assert _home_opened(harness, FOUNDER) == 200
    home = wait_until(lambda: harness.slack.home_of(FOUNDER))
    assert "Deploys need two approvals" in _texts(home) and KEEP_NOTE in _texts(home)

    assert _interaction(harness, _clicked(FOUNDER, KEEP_NOTE, note.id)) == 200
    wait_until(lambda: harness.thoth.notes.store.listed("kept"))
    card = wait_until(lambda: "Kept by" in str(
        (harness.slack.message(CHANNEL, str(posted["ts"])) or {}).get("text", ""))
        and harness.slack.message(CHANNEL, str(posted["ts"])))
    assert FOUNDER in card["text"]
    wait_until(lambda: "Deploys need two approvals" not in _texts(
        harness.slack.home_of(FOUNDER)))
    # A second click on a note decided already changes nothing, and logs nothing.
    published = sum(call.method == "views.publish" for call in harness.slack.requests)
    assert _interaction(harness, _clicked(FOUNDER, KEEP_NOTE, note.id)) == 200
    wait_until(lambda: sum(call.method == "views.publish" for call in harness.slack.requests)
               > published)
    assert [e.action for e in harness.thoth.audit.entries(action="note")] == ["note.keep"]
    # A click on someone's tab by a non-founder decides nothing.
    other = harness.thoth.notes.propose(
        "Fridays are quiet", Place("T1", CHANNEL, "public"), user="U1", author_name="dana",
        source="🧠 reaction", session_id=None, speakers=["U1"])
    assert _interaction(harness, _clicked("U1", KEEP_NOTE, other.id)) == 200
    wait_until(lambda: harness.slack.home_of("U1"))
    assert harness.thoth.notes.store.get(other.id).status == "proposed"  # type: ignore[union-attr]


def test_a_home_tab_slack_refuses_is_logged_and_nothing_else_breaks(harness: Harness) -> None:
    harness.slack.home_tab_enabled = False  # the app's manifest has no Home tab
    assert _home_opened(harness, "U1") == 200
    wait_until(lambda: any(call.method == "views.publish" for call in harness.slack.requests))
    assert harness.slack.home_of("U1") is None


def _shortcut(callback_id: str, user: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message_action", "callback_id": callback_id, "trigger_id": "1.2.3",
            "team": {"id": "T1", "domain": "test"}, "channel": {"id": CHANNEL,
                                                                "name": "general"},
            "user": {"id": user, "team_id": "T1", "name": "someone"},
            "message": message, "message_ts": message["ts"], "response_url":
            "http://127.0.0.1:9/", "api_app_id": "A1"}


def test_remember_this_proposes_a_note_where_the_message_was_said(harness: Harness) -> None:
    message = {"type": "message", "user": "U1", "ts": "1700000500.000100",
               "text": "The staging database migrates on Tuesdays"}
    assert _interaction(harness, _shortcut(REMEMBER_THIS, "U2", message)) == 200
    (note,) = wait_until(lambda: harness.thoth.notes.store.listed("proposed"))
    assert note.text == "The staging database migrates on Tuesdays"
    assert (note.place.team, note.place.channel, note.place.channel_type) == (
        "T1", CHANNEL, "public")
    wait_until(lambda: any(messages.NOTE_PROPOSED in e["text"]
                           for e in harness.slack.ephemerals(CHANNEL)))
    wait_until(lambda: any("Memory note proposed" in str(m.get("text", ""))
                           for m in harness.replies_in(message["ts"])))
    (entry,) = harness.thoth.audit.entries(action="note")
    assert (entry.actor, entry.action, entry.origin) == (
        "slack:U2", "note.propose", "slack shortcut")


def test_forget_this_forgets_the_askers_own_exchange_only(harness: Harness) -> None:
    ts = "1700000600.000100"
    harness.model.push(api.text("The runbook is in the wiki."))
    harness.mention("where is the runbook?", ts)
    reply_ts, episode_id = harness.answered(ts)
    reply = {"type": "message", "user": "UBOT", "ts": reply_ts, "thread_ts": ts,
             "text": "The runbook is in the wiki."}
    assert _interaction(harness, _shortcut(FORGET_THIS, "U2", reply)) == 200
    wait_until(lambda: any(messages.FORGET_THIS_NOT_YOURS in e["text"]
                           for e in harness.slack.ephemerals(CHANNEL)))
    assert harness.thoth.episodic.store.get(episode_id) is not None
    assert _interaction(harness, _shortcut(FORGET_THIS, "U1", reply)) == 200
    wait_until(lambda: harness.thoth.episodic.store.get(episode_id) is None)
    # The audit line is written just after the episode is gone (forget_exchange.py).
    wait_until(lambda: bool(harness.thoth.audit.entries(action="episode")))
    (entry,) = harness.thoth.audit.entries(action="episode")
    assert (entry.actor, entry.action) == ("slack:U1", "episode.forget")
