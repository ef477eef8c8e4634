"""Routines made and managed in Slack (issue 53): proposed by the loopback model and created
on its card, made by `/thoth routine add`, listed by `/thoth routines` and changed from the
list's buttons — signed deliveries and clicks through the real Bolt app and SDK."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from bridge.routines.store import Routine, RoutineStore
from bridge.settings import Settings
from bridge.slack_api.routine_cards import CANCEL, CREATE, DELETE, PAUSE, RESUME, RUN_NOW
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import CHANNEL, FOUNDER, Harness, running_bridge
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

DM = "D0DANA0001"
ENG = "C0ENG00001"
SECRET_ROOM = "G0SECRET01"
WEEKDAYS_AT_9 = "0 9 * * 1-5"


@pytest.fixture
def harness(model_settings: Settings, fake_anthropic: FakeAnthropic,
            hashing_embedder: HashingEmbedder) -> Iterator[Harness]:
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        routine_max_per_person=3) as h:
        h.slack.add_channel(DM, "dana-dm", "im", user="U1")
        h.slack.add_channel(ENG, "eng")
        # A private channel Thoth is in and U1 is not.
        h.slack.add_channel(SECRET_ROOM, "secret", "private", members=["UBOT", "U2"])
        yield h


def _click(h: Harness, action_id: str, value: str, message_ts: str, user: str,
           channel: str = CHANNEL) -> int:
    action = {
        "type": "block_actions", "team": {"id": "T1"}, "user": {"id": user, "team_id": "T1"},
        "api_app_id": "A1", "container": {"type": "message", "channel_id": channel,
                                          "message_ts": message_ts},
        "channel": {"id": channel}, "message": {"ts": message_ts},
        "actions": [{"action_id": action_id, "value": value, "type": "button",
                     "block_id": "routine"}],
        "trigger_id": "1.2.3", "response_url": h.slack.response_url("click"),
    }
    return h.post(urllib.parse.urlencode({"payload": json.dumps(action)}),
                  content_type="application/x-www-form-urlencoded")[0]


def _routines(h: Harness, user: str = "U1") -> list[Routine]:
    return RoutineStore(h.thoth.db).of_person("T1", user)


def _thoth(h: Harness, words: str, user: str = "U1") -> str:
    """`/thoth WORDS` typed in the person's DM: the line only they see."""
    before = len(h.slack.ephemerals(DM))
    assert h.command("/thoth", words, user=user, channel=DM,
                     channel_name="directmessage")[0] == 200
    said = wait_until(lambda: len(h.slack.ephemerals(DM)) > before and h.slack.ephemerals(DM))
    return str(said[-1]["text"])


def _told_after(h: Harness, count: int, channel: str = CHANNEL) -> str:
    said = wait_until(lambda: len(h.slack.ephemerals(channel)) > count
                      and h.slack.ephemerals(channel))
    return str(said[-1]["text"])


def _card(h: Harness, thread: str) -> dict[str, Any]:
    return wait_until(lambda: next((m for m in h.replies_in(thread) if any(
        b.get("type") == "actions" for b in m.get("blocks") or [])), None))


def _buttons(message: dict[str, Any]) -> dict[str, str]:
    return {element["action_id"]: element["value"] for block in message["blocks"]
            if block.get("type") == "actions" for element in block["elements"]}


def _propose(h: Harness, fake_anthropic: FakeAnthropic, thread: str,
             **arguments: str) -> dict[str, Any]:
    fake_anthropic.push(api.tool_use("propose_routine", {
        "instruction": "Post a summary of yesterday's decisions", "cron": WEEKDAYS_AT_9,
        "place": "here", **arguments}), api.text("I proposed it on a card."))
    h.mention("every weekday at 9 post a summary of yesterday's decisions here", thread)
    return _card(h, thread)


def test_made_in_words_on_a_card_only_its_asker_creates(
    harness: Harness, fake_anthropic: FakeAnthropic
) -> None:
    thread = "1700000100.000100"
    card = _propose(harness, fake_anthropic, thread)
    shown = json.dumps(card["blocks"])
    # The next three times, each in its reader's own zone, and the creator's zone named.
    assert shown.count("<!date^") == 3 and "Europe/London" in shown
    assert "Monday to Friday" in shown and f"<#{CHANNEL}>" in shown
    wait_until(lambda: len(fake_anthropic.requests) == 2)
    offered = [tool["name"] for tool in fake_anthropic.requests[0].body["tools"]]
    assert "propose_routine" in offered
    told = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert "not made until they press Create" in told["content"]
    assert _routines(harness) == []

    value = _buttons(card)[CREATE]
    # Someone else's click is answered where only they see it, and makes nothing.
    assert _click(harness, CREATE, value, card["ts"], "U2") == 200
    assert "Only <@U1> can create" in _told_after(harness, 0)
    assert _routines(harness) == []

    assert _click(harness, CREATE, value, card["ts"], "U1") == 200
    (made,) = wait_until(lambda: _routines(harness))
    assert (made.place.channel, made.cron, made.zone) == (CHANNEL, WEEKDAYS_AT_9,
                                                          "Europe/London")
    assert made.instruction == "Post a summary of yesterday's decisions"
    updated = wait_until(lambda: f"Created: routine `{made.id}`, next run <!date^" in
                         json.dumps((harness.slack.message(CHANNEL, card["ts"]) or {})
                                    .get("blocks")) and harness.slack.message(CHANNEL,
                                                                              card["ts"]))
    assert not any(b.get("type") == "actions" for b in updated["blocks"])
    (entry,) = harness.thoth.audit.entries(action="routine.create")
    assert (entry.actor, entry.target) == ("slack:U1", f"routine:{made.id}")
    # The same card clicked again (a second replica, a double click): still one routine.
    told = len(harness.slack.ephemerals(CHANNEL))
    assert _click(harness, CREATE, value, card["ts"], "U1") == 200
    assert "made its routine already" in _told_after(harness, told)
    assert len(_routines(harness)) == 1


def test_cancel_makes_nothing_and_is_the_askers(
    harness: Harness, fake_anthropic: FakeAnthropic
) -> None:
    card = _propose(harness, fake_anthropic, "1700000200.000100")
    value = _buttons(card)[CANCEL]
    assert _click(harness, CANCEL, value, card["ts"], "U2") == 200
    assert "Only <@U1> can cancel" in _told_after(harness, 0)
    assert _click(harness, CANCEL, value, card["ts"], "U1") == 200
    wait_until(lambda: "Cancelled by <@U1>" in json.dumps(
        (harness.slack.message(CHANNEL, card["ts"]) or {}).get("blocks")))
    assert _routines(harness) == []


def test_the_model_is_told_a_refusal_in_one_line(
    harness: Harness, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use("propose_routine", {
        "instruction": "Check the deploys", "cron": "*/5 * * * *"}), api.text("Too often."))
    harness.mention("check the deploys every five minutes", "1700000300.000100")
    wait_until(lambda: len(fake_anthropic.requests) == 2)
    told = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert told["is_error"] is True
    assert "a routine runs at most every 15 minutes" in told["content"]
    assert "\n" not in told["content"]
    assert not any(any(b.get("type") == "actions" for b in m.get("blocks") or [])
                   for m in harness.replies_in("1700000300.000100"))


def test_made_by_command_where_it_names_or_here(harness: Harness) -> None:
    said = _thoth(harness, f'routine add "{WEEKDAYS_AT_9}" <#{ENG}|eng> Post the digest')
    (made,) = _routines(harness)
    assert said.startswith(f"Created routine {made.id}: at 09:00, on Monday to Friday"
                           " (Europe/London), posting to #eng; next run ")
    assert (made.place.channel, made.place.channel_type, made.instruction) == (
        ENG, "public", "Post the digest")
    # No channel: the DM it was typed in; a typographic quote is a quote.
    _thoth(harness, "routine add \u201c30 17 * * 5\u201d Remind me to check the freeze")
    dm = _routines(harness)[1]
    assert (dm.place.channel, dm.place.channel_type, dm.cron) == (DM, "im", "30 17 * * 5")
    assert [e.origin for e in harness.thoth.audit.entries(action="routine.create")] == [
        "slack /thoth", "slack /thoth"]


def test_bad_input_is_one_line_each(harness: Harness) -> None:
    assert "is not a schedule" in _thoth(harness, 'routine add "0 9 * *" <#C0ENG00001> Hi')
    assert "at most every 15 minutes" in _thoth(harness, 'routine add "* * * * *" Hi')
    assert "cannot post in" in _thoth(harness, f'routine add "0 9 * * *" <#{SECRET_ROOM}> Hi')
    assert "Usage: /thoth routine add" in _thoth(harness, 'routine add "0 9 * * *"')
    for hour in range(3):
        _thoth(harness, f'routine add "0 {hour} * * *" Routine {hour}')
    too_many = _thoth(harness, 'routine add "0 5 * * *" One more')
    assert "you have 3 routines, the most one person may" in too_many
    assert "\n" not in too_many
    assert len(_routines(harness)) == 3
    # Typed in a DM between two people, not with Thoth: that DM is not the creator's own.
    harness.slack.add_channel("D0DANAARI", "dana-ari", "im", user="U2")
    assert harness.command("/thoth", 'routine add "0 6 * * *" Hi', channel="D0DANAARI",
                           channel_name="directmessage")[0] == 200
    said = wait_until(lambda: harness.slack.ephemerals("D0DANAARI"))
    assert "you cannot post in this DM" in str(said[-1]["text"])
    # Outside a DM, /thoth says where it works.
    assert harness.command("/thoth", "routines", channel=CHANNEL)[0] == 200
    assert "/thoth works in a DM with Thoth" in _told_after(harness, 0)


def test_listed_with_buttons_that_only_the_creator_or_a_founder_use(harness: Harness) -> None:
    _thoth(harness, f'routine add "{WEEKDAYS_AT_9}" <#{ENG}|eng> Post the digest')
    (made,) = _routines(harness)
    before = len(harness.slack.ephemerals(DM))
    assert harness.command("/thoth", "routines", channel=DM,
                           channel_name="directmessage")[0] == 200
    listing = wait_until(lambda: len(harness.slack.ephemerals(DM)) > before
                         and harness.slack.ephemerals(DM)[-1])
    buttons = {element["action_id"]: element["value"] for block in listing["blocks"]
               if block.get("type") == "actions" for element in block["elements"]}
    assert buttons == {PAUSE: made.id, RUN_NOW: made.id, DELETE: made.id}
    assert "Post the digest" in json.dumps(listing["blocks"])

    def click(action: str, user: str = "U1") -> str:
        count = len(harness.slack.ephemerals(DM))
        assert _click(harness, action, made.id, listing["message_ts"], user, DM) == 200
        return _told_after(harness, count, DM)

    assert "is not yours" in click(PAUSE, "U2")
    assert _routines(harness)[0].state == "active"
    assert f"Paused routine `{made.id}`" in click(PAUSE)
    assert _routines(harness)[0].state == "paused"
    # The list is shown again as it is now: Resume where Pause was.
    wait_until(lambda: any(RESUME in json.dumps(r) for r in harness.slack.responses()))
    assert "is paused: resume it first" in click(RUN_NOW)
    assert f"Resumed routine `{made.id}`" in click(RESUME)
    resumed = _routines(harness)[0]
    assert resumed.state == "active" and (resumed.next_run_at or 0) > time.time()
    assert f"Running now: routine `{made.id}`" in click(RUN_NOW)
    assert (_routines(harness)[0].next_run_at or 0) <= time.time()
    assert "is not yours" in click(DELETE, "U2")
    # A founder may change anyone's.
    assert f"Paused routine `{made.id}`" in click(PAUSE, FOUNDER)
    assert f"Deleted routine `{made.id}`" in click(DELETE)
    assert _routines(harness) == []
    actions = [(e.action, e.actor) for e in harness.thoth.audit.entries(action="routine")]
    assert sorted(actions) == sorted([
        ("routine.create", "slack:U1"), ("routine.pause", "slack:U1"),
        ("routine.resume", "slack:U1"), ("routine.run_now", "slack:U1"),
        ("routine.pause", f"slack:{FOUNDER}"), ("routine.delete", "slack:U1")])
