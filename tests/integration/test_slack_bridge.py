"""The Slack bridge end to end (see ``slack_harness.py`` for what runs for real)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest

from bridge import messages
from bridge.slack_api.clients import build_async_web_client, build_web_client
from bridge.slack_api.notifier import SlackNotifier
from layers.episodic.episode import Feedback
from tests.integration.slack_harness import (
    CHANNEL,
    FOUNDER,
    SECRET,
    Harness,
    failures_logged,
    shown,
    streamed_text,
)
from tests.servers import anthropic_api as api
from tests.waiting import wait_until


def test_a_mention_is_answered_in_its_thread(harness: Harness) -> None:
    harness.model.push(api.text("Deploys are on Fridays."))
    assert harness.mention("when do we deploy?", "1700000000.000100") == 200
    text = wait_until(lambda: streamed_text(harness, "1700000000.000100"))
    assert text == "Deploys are on Fridays."
    (request,) = harness.model.requests
    assert request.conversation()[-1]["content"] == "when do we deploy?"
    context = next(t for t in request.context_texts() if t.startswith("<slack-context>"))
    assert "#general" in context and "dana" in context


def test_bad_and_stale_signatures_are_refused(harness: Harness) -> None:
    body = json.dumps({"type": "event_callback", "event": {"type": "app_mention"}})
    assert harness.post(body, signature="v0=deadbeef")[0] == 401
    assert harness.post(body, timestamp=int(time.time()) - 3600)[0] == 401
    assert harness.model.requests == []


def test_a_missing_or_odd_timestamp_is_401_and_a_body_not_in_utf8_is_400(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    import hashlib
    import hmac
    import http.client

    url = urllib.parse.urlsplit(harness.url)

    def post(body: bytes, headers: dict[str, str]) -> int:
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        connection.request("POST", url.path, body=body,
                           headers={"content-type": "application/json", **headers})
        status = connection.getresponse().status
        connection.close()
        return status

    body = json.dumps({"type": "event_callback", "event": {"type": "app_mention"}}).encode()
    assert post(body, {"x-slack-signature": "v0=abc"}) == 401
    assert post(body, {"x-slack-signature": "v0=abc",
                       "x-slack-request-timestamp": "soon"}) == 401
    moment = str(int(time.time()))
    latin = b'{"text": "caf\xe9"}'
    signed = "v0=" + hmac.new(SECRET.encode(), b"v0:" + moment.encode() + b":" + latin,
                              hashlib.sha256).hexdigest()
    assert post(latin, {"x-slack-signature": signed,
                        "x-slack-request-timestamp": moment}) == 400
    assert not failures_logged(caplog)
    assert "no numeric X-Slack-Request-Timestamp" in caplog.text and "not UTF-8" in caplog.text
    assert harness.model.requests == []


def test_a_retried_event_and_a_double_delivery_are_answered_once(harness: Harness) -> None:
    ts = "1700000000.000200"
    assert harness.mention("hello", ts, event_id="EvSAME") == 200
    retry = {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
    assert harness.mention("hello", ts, event_id="EvSAME", headers=retry) == 200
    harness.event({"type": "message", "channel_type": "channel", "user": "U1",
                   "text": "<@UBOT> hello", "ts": ts, "channel": CHANNEL})
    wait_until(lambda: streamed_text(harness, ts))
    time.sleep(0.3)  # room for a wrong second answer to show up
    assert len(harness.model.requests) == 1
    assert len(harness.replies_in(ts)) == 1


def test_twenty_threads_at_once_with_a_slow_model(harness: Harness) -> None:
    harness.model.push(*[api.text("slow answer", delay_s=1.0) for _ in range(20)])
    acks = []
    for number in range(20):
        status, _, elapsed = harness.post(json.dumps({
            "type": "event_callback", "team_id": "T1", "event_id": f"EvMany{number}",
            "event": {"type": "app_mention", "user": "U1", "text": f"<@UBOT> question {number}",
                      "ts": f"1700000100.{number:06d}", "channel": CHANNEL},
        }))
        assert status == 200
        acks.append(elapsed)
    # Slack retries after 3 s: every ack must come back long before that.
    assert max(acks) < 1.0
    for number in range(20):
        wait_until(lambda n=number: streamed_text(harness, f"1700000100.{n:06d}"), 60)
    assert len(harness.model.requests) == 20
    for number in range(20):
        assert len(harness.replies_in(f"1700000100.{number:06d}")) == 1


def test_slack_is_asked_who_the_token_is_once_however_many_requests_come_at_once(
    harness: Harness,
) -> None:
    def react(number: int) -> int:
        return harness.event(
            {"type": "reaction_added", "user": "U1", "reaction": "eyes",
             "item": {"type": "message", "channel": CHANNEL, "ts": f"1700003000.{number:06d}"}},
            event_id=f"EvAuth{number}",
        )

    with ThreadPoolExecutor(max_workers=10) as pool:
        assert list(pool.map(react, range(10))) == [200] * 10
    # At start, by the bridge; Bolt's authorization is handed that answer (one request
    # of a burst each asking would meet auth.test's rate tier).
    assert len(harness.slack.calls("auth.test")) == 1


def test_requests_are_acked_while_the_turns_loop_is_blocked(harness: Harness) -> None:
    """Acks (uvicorn's loop) and turns (the runner's) run on different loops: even a turn
    that wrongly blocks its loop delays no ack."""

    blocking, released = threading.Event(), threading.Event()

    async def blocking_turn() -> None:
        blocking.set()
        released.wait(10)  # a forgotten to_thread: the turns' loop stands still

    harness.bridge.runner.submit(blocking_turn())
    assert blocking.wait(5)
    try:
        status, body, elapsed = harness.command("/recall", "anything")
    finally:
        released.set()
    assert status == 200 and elapsed < 1.0 and "Searching" in body


def test_recall_acks_while_a_slow_turn_runs(harness: Harness) -> None:
    harness.model.push(api.text("Noted.", delay_s=3.0))
    harness.mention("the staging database migrates on Tuesdays", "1700000200.000100")
    harness.model.wait_for_requests(1)
    status, body, elapsed = harness.command("/recall", "staging database")
    assert status == 200 and elapsed < 1.0
    assert "Searching" in body
    ephemeral = wait_until(lambda: harness.slack.ephemerals(CHANNEL), 30)
    assert ephemeral[0]["user"] == "U1"


def test_reactions_do_what_the_table_says_and_removing_undoes_it(harness: Harness) -> None:
    ts = "1700000300.000100"
    harness.model.push(api.text("Use the blue-green deploy for the API."))
    harness.mention("how should we deploy the api?", ts)
    reply_ts, episode_id = harness.answered(ts)
    store = harness.thoth.episodic.store

    harness.reaction("white_check_mark", reply_ts)
    wait_until(lambda: store.get(episode_id).feedback == Feedback.WORKED)
    harness.reaction("white_check_mark", reply_ts, added=False)
    wait_until(lambda: store.get(episode_id).feedback == Feedback.NONE)
    harness.reaction("x", reply_ts, user="UBOT")  # the bot's own reaction counts for nothing
    harness.reaction("x", reply_ts, added=False, user="U2")  # never given: changes nothing
    harness.reaction("white_check_mark", reply_ts, user="U2")
    wait_until(lambda: store.get(episode_id).feedback == Feedback.WORKED)
    harness.reaction("x", reply_ts)
    wait_until(lambda: store.get(episode_id).feedback == Feedback.DID_NOT_WORK)
    harness.reaction("x", reply_ts, added=False)  # U2's ✅ still stands
    wait_until(lambda: store.get(episode_id).feedback == Feedback.WORKED)

    harness.reaction("wastebasket", reply_ts, user="U2")  # not the asker: refused
    wait_until(lambda: any("Only the person who asked" in e["text"]
                           for e in harness.slack.ephemerals(CHANNEL)))
    assert store.get(episode_id) is not None

    # 🧠 proposes a note where it was said; a founder's ✅ on its card keeps it.
    memory = harness.thoth.brain.persona_dir / "MEMORY.md"
    harness.reaction("brain", reply_ts)
    wait_until(lambda: harness.thoth.notes.store.listed("proposed"))
    assert "how should we deploy the api?" not in memory.read_text()

    def card() -> str | None:
        return next((m["ts"] for m in harness.replies_in(ts)
                     if "Memory note proposed" in m.get("text", "")), None)

    card_ts = wait_until(card)
    # The card's ✅ and ❌ are added after it is posted.
    wait_until(lambda: set(harness.slack.reactions_on(CHANNEL, card_ts))
               >= {"white_check_mark", "x"})
    harness.reaction("white_check_mark", card_ts, user="U2")  # not a founder: refused
    wait_until(lambda: any("keep or reject memory notes" in e["text"]
                           for e in harness.slack.ephemerals(CHANNEL)))
    harness.reaction("white_check_mark", card_ts, user=FOUNDER)
    wait_until(lambda: "how should we deploy the api?" in memory.read_text())
    harness.reaction("brain", reply_ts, added=False)
    wait_until(lambda: "how should we deploy the api?" not in memory.read_text())
    (withdrawn,) = wait_until(lambda: harness.thoth.notes.store.listed("rejected"))
    assert withdrawn.place.channel == CHANNEL and withdrawn.user == "U1"

    identity = harness.thoth.identity
    assert identity is not None
    harness.reaction("bust_in_silhouette", reply_ts)

    def facts() -> list[str]:
        from layers.identity.protocol import Person

        return [f.text for f in asyncio.run(identity.facts(Person("T1", "U1")))]

    wait_until(lambda: any("deploy the api" in fact for fact in facts()))
    harness.reaction("bust_in_silhouette", reply_ts, added=False)
    wait_until(lambda: not any("deploy the api" in fact for fact in facts()))

    session = harness.thoth.sessions.find_open(f"slack:T1:{CHANNEL}:{ts}")
    assert session is not None and harness.thoth.transcript.count(session.id) == 1
    harness.reaction("wastebasket", reply_ts)
    wait_until(lambda: store.get(episode_id) is None)
    wait_until(lambda: any("Forgotten" in m.get("text", "") for m in harness.replies_in(ts)))
    # Gone from the transcript too: never replayed, never reflected on.
    assert harness.thoth.transcript.count(session.id) == 0
    # Each change is in the audit log, by whom, from Slack: oldest first here.
    changes = [(e.actor, e.action) for e in reversed(harness.thoth.audit.entries())]
    assert changes == [
        ("slack:U1", "note.propose"), (f"slack:{FOUNDER}", "note.keep"),
        ("slack:U1", "note.withdraw"), ("slack:U1", "fact.add"), ("slack:U1", "fact.forget"),
        ("slack:U1", "episode.forget"),
    ]
    assert {e.origin for e in harness.thoth.audit.entries()} == {"slack"}


def test_skill_cards_need_a_founder(harness: Harness) -> None:
    body = "# Standup\n\n1. Collect updates.\n2. Group by person.\n3. Flag blockers with owners.\n"
    draft = harness.thoth.drafts.propose("standup-digest", "Digest a standup", body * 2)
    # Posted as the reflection child posts it.
    notifier = SlackNotifier(build_web_client(harness.thoth.settings), harness.thoth.db, None)
    card_ts = notifier.post_card(draft, channel=CHANNEL, thread_ts=None)
    assert set(harness.slack.reactions_on(CHANNEL, card_ts)) >= {"white_check_mark", "x"}

    harness.reaction("white_check_mark", card_ts, user="U1")
    refusal = wait_until(lambda: harness.slack.ephemerals(CHANNEL))
    assert "Only founders" in refusal[0]["text"]
    assert harness.thoth.drafts.get(draft.id).state.value == "pending"

    action = {
        "type": "block_actions", "team": {"id": "T1"}, "user": {"id": FOUNDER},
        "api_app_id": "A1", "container": {"type": "message", "channel_id": CHANNEL,
                                          "message_ts": card_ts},
        "channel": {"id": CHANNEL}, "message": {"ts": card_ts},
        "actions": [{"action_id": "skill_draft_approve", "value": draft.id,
                     "type": "button", "block_id": "b1"}],
        "trigger_id": "1.2.3", "response_url": "http://127.0.0.1:9/",
    }
    status, _, elapsed = harness.post(
        urllib.parse.urlencode({"payload": json.dumps(action)}),
        content_type="application/x-www-form-urlencoded",
    )
    assert status == 200 and elapsed < 1.0
    wait_until(lambda: harness.thoth.drafts.get(draft.id).state.value == "accepted")
    card = wait_until(lambda: "approved" in (harness.slack.message(CHANNEL, card_ts) or {}).get(
        "text", "") and harness.slack.message(CHANNEL, card_ts))
    assert FOUNDER in card["text"]
    assert harness.thoth.skills.get("standup-digest") is not None
    (approved,) = harness.thoth.audit.entries(action="skill")
    assert (approved.actor, approved.action, approved.target) == (
        f"slack:{FOUNDER}", "skill.approve", f"draft:{draft.id}")


def test_a_rate_limited_call_is_retried(harness: Harness) -> None:
    harness.slack.fail_next("chat.startStream", status=429, retry_after=1)
    harness.model.push(api.text("After a short wait."))
    harness.mention("hello again", "1700000400.000100")
    text = wait_until(lambda: streamed_text(harness, "1700000400.000100"), 30)
    assert text == "After a short wait."
    assert len(harness.slack.calls("chat.startStream")) == 2


def test_without_streaming_the_reply_is_posted_then_updated(harness: Harness) -> None:
    harness.slack.fail_next("chat.startStream", status=200, error="not_in_assistant_thread")
    # Lines, since a reply is shown a line at a time (each line redacted whole).
    expected = "A reply that arrives\nin several\npieces."
    harness.model.push(api.text(expected, chunk_chars=5))
    harness.mention("tell me something", "1700000500.000100")
    wait_until(lambda: streamed_text(harness, "1700000500.000100") == expected)
    assert harness.slack.calls("chat.postMessage")
    wait_until(lambda: harness.slack.calls("chat.update"))


def test_done_and_recall_work_as_text_in_a_thread(harness: Harness) -> None:
    root = "1700000600.000100"
    harness.model.push(api.text("Noted: migrations on Tuesdays."))
    harness.mention("staging migrations happen on Tuesdays", root)
    wait_until(lambda: streamed_text(harness, root))
    key = f"slack:T1:{CHANNEL}:{root}"
    assert harness.thoth.sessions.find_open(key) is not None
    wait_until(lambda: harness.thoth.episodic.store.count() == 1)

    harness.mention("recall staging migrations", "1700000600.000200", thread_ts=root)
    wait_until(lambda: any("migrations happen on Tuesdays" in m.get("text", "")
                           for m in harness.replies_in(root)))
    assert len(harness.model.requests) == 1  # the recall command did not reach the model
    harness.model.push(
        api.tool_use(
            "report_reflection",
            {"outcome": "success", "memory_notes": ["Staging migrations run on Tuesdays"]},
        )
    )
    # A bystander cannot end it (and so start its reflection), by text or by command.
    harness.event({"type": "app_mention", "user": "U2", "text": "<@UBOT> done",
                   "ts": "1700000600.000250", "thread_ts": root, "team": "T1",
                   "channel": CHANNEL})
    wait_until(lambda: any(messages.NOT_YOUR_SESSION in m.get("text", "")
                           for m in harness.replies_in(root)))
    assert harness.command("/done", "", user="U2")[0] == 200
    wait_until(lambda: sum(messages.NOT_YOUR_SESSION in m.get("text", "")
                           for m in harness.replies_in(root)) == 2)
    assert harness.thoth.sessions.find_open(key) is not None
    harness.mention("done", "1700000600.000300", thread_ts=root)
    wait_until(lambda: harness.thoth.sessions.find_open(key) is None)
    def summaries() -> list[str]:
        return [m["text"] for m in harness.replies_in(root) if "Session ended" in m.get("text", "")]

    summary = wait_until(summaries, 90)
    assert "outcome: success" in summary[0]
    assert "1 memory note(s) await a founder's approval" in summary[0]
    # The note's card waits in the thread for a founder; the note is in no prompt yet.
    (note,) = harness.thoth.notes.store.listed("proposed")
    assert note.text == "Staging migrations run on Tuesdays" and note.place.channel == CHANNEL
    assert any("Staging migrations run on Tuesdays" in m.get("text", "")
               for m in harness.replies_in(root) if "Memory note proposed" in m.get("text", ""))
    reflection_call = harness.model.requests[-1].body
    assert reflection_call["tool_choice"] == {"type": "auto"}  # Opus 5.5 refuses a forced tool
    assert "staging migrations happen on Tuesdays" in reflection_call["messages"][0]["content"]


def test_founders_get_a_direct_message(harness: Harness) -> None:
    from bridge.slack_api.founder_dms import dm_founders

    client = build_web_client(harness.thoth.settings)
    observation = "**Observation:** be briefer than <!here> & <@U2>."
    assert dm_founders(client, [FOUNDER, "U1"], observation) == 2
    (dm,) = harness.slack.messages(FOUNDER)
    (call, _) = harness.slack.calls("chat.postMessage")
    assert call.args["markdown_text"] == dm["text"]  # Slack's own Markdown, no converter
    assert dm["text"] == "**Observation:** be briefer than &lt;!here&gt; &amp; &lt;@U2&gt;."


def test_doctor_checks_the_slack_token(harness: Harness) -> None:
    from bridge.health_checks import Status, run_checks

    (slack,) = [c for c in run_checks(harness.thoth) if c.name == "slack"]
    assert slack.status is Status.OK and "HTTP mode, bot thoth" in slack.detail


def test_a_failing_stream_never_loses_the_reply(harness: Harness) -> None:
    harness.slack.fail_next("chat.appendStream", status=200, error="internal_error")
    harness.slack.fail_next("chat.stopStream", status=200, error="internal_error")
    answer = "word " * 200
    harness.model.push(api.text(answer, chunk_chars=50))
    harness.mention("a long answer please", "1700000700.000100")

    def everything_shown() -> str:
        # The stream (left open: Slack refused to close it), then what was posted after it.
        return "".join(shown(m) for m in harness.replies_in("1700000700.000100"))

    wait_until(lambda: everything_shown().strip() == answer.strip())
    assert len(harness.slack.calls("chat.appendStream")) <= 4  # paused, not one per chunk
    session = harness.thoth.sessions.find_open(f"slack:T1:{CHANNEL}:1700000700.000100")
    assert session is not None
    # The transcript is written just after the reply is shown.
    (turn,) = wait_until(lambda: harness.thoth.transcript.turns(session.id))
    assert turn.ok and turn.reply_text == answer.strip()


def test_follow_ups_are_posted_when_due_and_can_be_cancelled(harness: Harness) -> None:
    from bridge.slack_api.followup_posts import post_due_followups

    db = harness.thoth.db
    with db.write() as conn:
        for session, thread in (("s-due", "1700000800.000100"), ("s-cancel", "1700000900.000100")):
            conn.execute(
                "INSERT INTO followups (session_id, team, channel, thread_ts, text, due_at,"
                " state, created_at) VALUES (?, 'T1', ?, ?, 'Checking back.', ?, 'pending', 0)",
                (session, CHANNEL, thread, time.time() + 3600),
            )
    client = build_async_web_client(harness.thoth.settings)
    from layers.shared.offloaded import Offloaded

    followups = Offloaded(harness.thoth.followups)

    def post(**when: float) -> int:
        return asyncio.run(post_due_followups(followups, client, **when))

    assert post() == 0  # not yet due
    harness.mention("please cancel the follow-up", "1700000900.000200",
                    thread_ts="1700000900.000100")
    wait_until(lambda: any("won't check back" in m.get("text", "")
                           for m in harness.replies_in("1700000900.000100")))
    assert post(now=time.time() + 7200) == 1
    assert [m["text"] for m in harness.replies_in("1700000800.000100")] == ["Checking back."]
    assert harness.replies_in("1700000900.000100")[-1]["text"] != "Checking back."
    assert post(now=time.time() + 7200) == 0  # posted once
