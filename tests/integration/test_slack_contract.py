"""The bridge against what Slack documents it refuses: Stop, escaping, rate tiers,
channels the bot is not in, ephemerals in threads, and bodies that are not Slack's."""

from __future__ import annotations

import contextlib
import html
import http.client
import json
import logging
import os
import socket
import time
import urllib.parse
from typing import Any

import pytest

from bridge import messages
from bridge.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import (
    CHANNEL,
    Harness,
    failures_logged,
    running_bridge,
    shown,
    streamed_text,
)
from tests.secret_corpus import SECRETS
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_rules import Tier
from tests.waiting import wait_until


def _session_turns(harness: Harness, root: str) -> list[Any]:
    session = harness.thoth.sessions.find_open(f"slack:T1:{CHANNEL}:{root}")
    return [] if session is None else harness.thoth.transcript.turns(session.id)


def test_stop_ends_the_reply_with_no_more_appends_and_no_repost(harness: Harness) -> None:
    root = "1700001000.000100"
    answer = "".join(f"part{n} " for n in range(80))
    harness.model.push(api.text(answer, chunk_chars=8, chunk_delay_s=0.03))
    harness.mention("explain everything", root)
    (start,) = harness.slack.wait_for_call("chat.startStream")
    stream_ts = wait_until(lambda: harness.replies_in(root) and harness.replies_in(root)[0]["ts"])
    harness.slack.stop_stream_by_user(CHANNEL, stream_ts)
    stopped_at = time.monotonic()

    # The transcript is written after the sink's last call: nothing can follow it.
    (turn,) = wait_until(lambda: _session_turns(harness, root), 20)
    after = [c.method for c in harness.slack.calls() if c.received_at > stopped_at]
    assert after.count("chat.appendStream") <= 1  # the one Slack refused, then none
    assert "chat.postMessage" not in after and "chat.stopStream" not in after
    assert len(harness.replies_in(root)) == 1  # nothing shown twice
    assert not turn.ok and turn.reply_text.endswith(messages.STOPPED)
    assert turn.reply_text.startswith("part0")  # what was shown is kept in the transcript
    assert harness.thoth.episodic.store.count() == 0  # not a successful episode
    assert len(answer) > len(harness.slack.messages(CHANNEL, root)[-1]["text"])


def test_a_partner_in_a_slack_connect_channel_is_streamed_to_in_their_own_team(
    harness: Harness,
) -> None:
    slack = harness.slack
    slack.add_channel("CEXT", "partner-project", is_shared=True, is_ext_shared=True)
    slack.add_user("UPARTNER", "pat", team_id="T9")
    harness.model.push(api.text("Happy to help with the launch."))
    harness.event({"type": "app_mention", "user": "UPARTNER", "user_team": "T9",
                   "text": "<@UBOT> can you help?", "ts": "1700001050.000100",
                   "team": "T1", "channel": "CEXT"})
    (start,) = slack.wait_for_call("chat.startStream")
    assert (start.args["recipient_user_id"], start.args["recipient_team_id"]) == (
        "UPARTNER", "T9")
    # A member of the installing workspace, in the same channel: their own team.
    harness.model.push(api.text("Sure."))
    harness.event({"type": "app_mention", "user": "U1", "user_team": "T1",
                   "text": "<@UBOT> and me?", "ts": "1700001050.000200",
                   "team": "T1", "channel": "CEXT"})
    second = wait_until(lambda: slack.calls("chat.startStream")[1:])
    assert second[0].args["recipient_team_id"] == "T1"


def test_a_request_for_another_workspace_is_answered_and_never_acted_on(
    harness: Harness, caplog: pytest.LogCaptureFixture,
) -> None:
    before = len(harness.slack.calls())
    body = {"token": "verification_token", "team_id": "T_OTHER", "api_app_id": "A1",
            "type": "event_callback", "event_id": "EvOTHER1", "event_time": int(time.time()),
            "event": {"type": "app_mention", "user": "U7", "team": "T_OTHER", "channel": "C7",
                      "text": "<@UBOT> our launch codename is Heron", "ts": "1700001260.000100",
                      "event_ts": "1700001260.000100"}}
    with caplog.at_level(logging.WARNING):
        assert harness.post(json.dumps(body))[0] == 200
    assert any("T_OTHER" in record.getMessage() for record in caplog.records)
    command = urllib.parse.urlencode({
        "team_id": "T_OTHER", "channel_id": "C7", "user_id": "U7", "command": "/recall",
        "text": "launch", "response_url": harness.slack.response_url(), "trigger_id": "1"})
    status, said, _ = harness.post(command, content_type="application/x-www-form-urlencoded")
    assert status == 200 and "not installed in this workspace" in said
    # The process is up for its own workspace: a mention sent after those requests is
    # answered, and stored (which waits for its turn's work to be done).
    harness.model.push(api.text("Still here."))
    harness.mention("are you there?", "1700001260.000200")
    assert wait_until(lambda: streamed_text(harness, "1700001260.000200")) == "Still here."
    harness.answered("1700001260.000200")
    # Nothing of the other workspace's was acted on: no call to Slack about it, nothing
    # stored, no turn asked of the model (the one turn is this workspace's).
    assert not [call for call in harness.slack.calls()[before:]
                if "C7" in json.dumps(call.args) or "T_OTHER" in json.dumps(call.args)]
    assert harness.thoth.episodic.store.count() == 1
    assert harness.model.requests
    assert not [r for r in harness.model.requests if "Heron" in json.dumps(r.body)]


def test_ten_mentions_at_once_keep_to_one_rate_budget(harness: Harness) -> None:
    limits = harness.slack.rate_limits
    # Slack's limits brought down, so ten replies at once run into them.
    for method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
        limits.tiers[method] = Tier(per_minute=120, burst=2)
    roots = [f"1700001250.{n:06d}" for n in range(10)]
    answers = [f"Answer number {n}: " + "all of it, " * 8 + "done." for n in range(10)]
    harness.model.push(*[api.text(answer, chunk_chars=12, chunk_delay_s=0.01)
                         for answer in answers])
    for root in roots:
        assert harness.mention("go", root) == 200

    finals = [wait_until(lambda root=root: streamed_text(harness, root), 90) for root in roots]
    # Every mention answered once, each final answer whole.
    assert sorted(finals) == sorted(answers)
    assert all(len(harness.replies_in(root)) == 1 for root in roots)
    assert limits.refused > 0  # Slack did say wait
    # And after it did, no call of that method came before the wait was over.
    assert limits.early == []


def test_ten_posted_replies_at_once_in_one_channel_all_arrive_whole(harness: Harness) -> None:
    limits = harness.slack.rate_limits
    # Streaming refused, so each reply is posted and edited; the channel's posts one a
    # second: the last waits longer than the client's own three retries.
    harness.slack.fail_next("chat.startStream", status=200, count=10,
                            error="not_in_assistant_thread")
    limits.post_per_channel = Tier(per_minute=60, burst=1)
    roots = [f"1700001270.{n:06d}" for n in range(10)]
    answers = [f"Posted answer {n}, in full." for n in range(10)]
    harness.model.push(*[api.text(answer) for answer in answers])
    for root in roots:
        assert harness.mention("go", root) == 200

    finals = [wait_until(lambda root=root: streamed_text(harness, root), 90) for root in roots]
    assert sorted(finals) == sorted(answers)  # none dropped, each whole
    assert all(len(harness.replies_in(root)) == 1 for root in roots)
    assert limits.refused > 0 and limits.early == []


def test_a_remembered_channel_ping_arrives_escaped(harness: Harness) -> None:
    root = "1700001100.000100"
    harness.model.push(api.text("Noted: <!here> the freeze & a < b."))
    harness.mention("<!channel> the deploy freeze starts Friday", root)
    wait_until(lambda: streamed_text(harness, root))
    streamed = [c.args.get("markdown_text") or "" for c in harness.slack.calls()
                if c.method.endswith("Stream")]
    assert "&lt;!here&gt;" in "".join(streamed) and "<!here>" not in "".join(streamed)
    assert "&amp; a &lt; b" in streamed_text(harness, root)
    wait_until(lambda: harness.thoth.episodic.store.count() == 1)

    other = "1700001100.000200"
    harness.mention("recall deploy freeze", other)
    recalled = wait_until(lambda: [shown(m) for m in harness.replies_in(other)])
    assert "&lt;!channel&gt; the deploy freeze" in recalled[0]
    for call in harness.slack.calls("chat.postMessage"):
        assert "<!channel>" not in json.dumps(call.args)


def test_commands_where_the_bot_is_not_a_member_answer_through_response_url(
    harness: Harness,
) -> None:
    harness.slack.add_channel("C9", "random", is_member=False)
    status, _, _ = harness.command("/done", "", channel="C9", channel_name="random")
    assert status == 200
    (answer,) = wait_until(lambda: harness.slack.responses())
    assert answer["response_type"] == "ephemeral"
    assert "no open session" in json.dumps(answer["blocks"])
    # The word "payload" in a command's text once made Bolt read the form as a click.
    status, body, _ = harness.command("/recall", "payload size", channel="C9")
    assert status == 200 and "Searching" in body
    wait_until(lambda: len(harness.slack.responses()) == 2)


def test_refusals_about_a_reply_are_said_in_its_thread(harness: Harness) -> None:
    root = "1700001200.000100"
    harness.model.push(api.text("Rotate the keys monthly."))
    harness.mention("how often do we rotate keys?", root)
    reply_ts, _ = harness.answered(root)
    harness.reaction("wastebasket", reply_ts, user="U2")
    (refusal,) = wait_until(lambda: harness.slack.ephemerals(CHANNEL))
    assert refusal["thread_ts"] == root and refusal["user"] == "U2"


def test_the_post_and_edit_fallback_edits_at_most_once_a_second(harness: Harness) -> None:
    root = "1700001300.000100"
    harness.slack.fail_next("chat.startStream", status=200, error="not_in_assistant_thread")
    answer = "".join(f"w{n} " + "\n" * (n % 5 == 4) for n in range(120))
    harness.model.push(api.text(answer, chunk_chars=6, chunk_delay_s=0.03))
    harness.mention("talk for a while", root)
    wait_until(lambda: streamed_text(harness, root) == answer.strip(), 30)
    edits = [c.received_at for c in harness.slack.calls("chat.update")]
    assert len(edits) >= 2
    # The last edit (the whole reply, with the feedback buttons) may follow at once.
    gaps = [later - earlier for earlier, later in zip(edits, edits[1:-1], strict=False)]
    assert all(gap >= 0.9 for gap in gaps), gaps
    final = harness.slack.calls("chat.update")[-1]
    assert [b["type"] for b in final.field("blocks")] == ["markdown", "context_actions"]


def test_bodies_slack_never_sends_are_refused_with_4xx(harness: Harness) -> None:
    form = "application/x-www-form-urlencoded"
    assert harness.post('{"type": "event_callback", "event": ')[0] == 400
    assert harness.post('[{"type": "event_callback"}]')[0] == 400
    assert harness.post("payload=%7Bnot+json", content_type=form)[0] == 400
    assert harness.post("payload=%5B1%2C2%5D", content_type=form)[0] == 400
    assert harness.post("", content_type=form)[0] == 400
    assert harness.post("{}", signature="v0=bad")[0] == 401
    assert harness.model.requests == []

    # An oversize body is refused unread; the connection is not parsed as a new request.
    url = urllib.parse.urlsplit(harness.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    huge = b"{" + b" " * 1_200_000 + b"}"
    connection.request("POST", url.path, body=huge, headers={"content-type": "application/json"})
    assert connection.getresponse().status == 413
    connection.close()
    health = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    health.request("GET", "/health")
    assert health.getresponse().read() == b"ok"
    harness.model.push(api.text("Still here."))
    assert harness.mention("are you there?", "1700001400.000100") == 200
    assert wait_until(lambda: streamed_text(harness, "1700001400.000100")) == "Still here."


def test_the_status_is_kept_alive_until_the_reply_is_finished(harness: Harness) -> None:
    import asyncio

    from bridge.slack.thread_reply import SlackSink
    from bridge.slack_api.clients import build_async_web_client

    client = build_async_web_client(harness.thoth.settings)
    sink = SlackSink(client, channel=CHANNEL, thread_ts="1700001500.000100",
                     recipient_user="U1", recipient_team="T1", status_refresh_s=0.05)

    async def long_turn() -> None:
        await sink.thinking()
        # Slack drops a status after two minutes without a message: it is set again.
        while len(harness.slack.statuses()) < 4:
            await asyncio.sleep(0.02)
        await sink.finish("Done at last.", ok=True)

    asyncio.run(long_turn())
    assert all(s["status"] == "is thinking…" for s in harness.slack.statuses()[:4])
    # finish() cancelled and awaited the refresher: the reply's own clear is the last status.
    assert harness.slack.statuses()[-1]["status"] == ""


def test_a_large_streamed_piece_is_cut_to_slacks_limit_between_entities(
    harness: Harness,
) -> None:
    root = "1700001600.000100"
    answer = "a<b&" * 2_500  # 10 000 characters, 22 500 once escaped
    harness.model.push(api.text(answer, chunk_chars=10_000))
    harness.mention("print the fixture", root)
    wait_until(lambda: streamed_text(harness, root))
    sent = [c.args.get("markdown_text") or "" for c in harness.slack.calls()
            if c.method.endswith("Stream")]
    assert all(len(text) <= 12_000 for text in sent) and len(sent) >= 2
    assert all(not text.endswith(("&", "&l", "&lt", "&a", "&am", "&amp")) for text in sent)
    assert "".join(sent) == answer.replace("&", "&amp;").replace("<", "&lt;")


def test_the_url_verification_handshake_is_answered(harness: Harness) -> None:
    body = json.dumps({"token": "verification_token", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9",
                       "type": "url_verification"})
    status, answer, _ = harness.post(body)
    assert status == 200 and "3eZbrw1aBm2rZgRNFdxV2595E9" in answer


def test_a_stream_slack_let_lapse_goes_on_as_an_edited_message(harness: Harness) -> None:
    root = "1700001700.000100"
    answer = "".join(f"step{n} " for n in range(60))
    harness.model.push(api.text(answer, chunk_chars=8, chunk_delay_s=0.03))
    harness.mention("walk me through it", root)
    harness.slack.wait_for_call("chat.startStream")
    stream_ts = wait_until(lambda: harness.replies_in(root) and harness.replies_in(root)[0]["ts"])
    harness.slack.lapse_stream(CHANNEL, stream_ts)
    wait_until(lambda: shown(harness.slack.message(CHANNEL, stream_ts) or {}) == answer.strip(),
               20)
    (turn,) = wait_until(lambda: _session_turns(harness, root))
    assert turn.ok and len(harness.replies_in(root)) == 1  # the same message, edited
    wait_until(lambda: harness.thoth.episodic.store.count() == 1)


def test_a_refused_step_chunk_is_dropped_and_the_reply_still_streams(harness: Harness) -> None:
    root = "1700001800.000100"
    harness.slack.fail_next("chat.appendStream", status=200, error="invalid_chunks")
    harness.model.push(api.text("The answer, intact.", chunk_chars=5))
    harness.mention("anything on this?", root)
    assert wait_until(lambda: streamed_text(harness, root), 20) == "The answer, intact."
    chunks_after = [c.field("chunks") for c in harness.slack.calls("chat.appendStream")[1:]]
    assert not any(chunks for chunks in chunks_after)  # the refused step was not sent again


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [html.unescape(value)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def test_a_reply_that_repeats_secrets_reaches_slack_redacted(harness: Harness) -> None:
    # The model repeats what the person pasted; streamed in small pieces, a secret is
    # cut across appends, and no piece of it may reach Slack.
    root = "1700001400.000100"
    harness.model.push(api.text("\n".join(seeded.text for seeded in SECRETS), chunk_chars=7))
    harness.mention("what did I paste earlier?", root)
    reply = wait_until(lambda: streamed_text(harness, root), 60)
    assert reply.count("[REDACTED:") >= len(SECRETS)
    sent = "\n".join(text for call in harness.slack.calls() for text in _strings(call.args))
    for seeded in SECRETS:
        pieces = {seeded.secret[i : i + 12] for i in range(max(1, len(seeded.secret) - 11))}
        assert not any(piece in sent for piece in pieces), seeded.kind


def test_the_unread_rest_of_a_refused_body_is_never_read_as_a_request(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    # The refused body is made of requests: were the server to read on after its 413,
    # it would answer them (and log their garbage as bad requests).
    url = urllib.parse.urlsplit(harness.url)
    smuggled = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    body = smuggled * (1_200_000 // len(smuggled))
    head = (f"POST {url.path} HTTP/1.1\r\nHost: {url.hostname}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    received = b""
    with caplog.at_level(logging.INFO), socket.create_connection(
        (url.hostname or "", url.port or 80), timeout=10
    ) as connection:
        # The server may stop reading: what it answered is still to be read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.sendall(head + body)
        # Answers to the smuggled requests would follow at once; a server that keeps
        # the connection open for its keep-alive time sends nothing more.
        connection.settimeout(2)
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := connection.recv(65536):
                received += chunk
    assert received.startswith(b"HTTP/1.1 413")
    assert received.count(b"HTTP/1.1 ") == 1, received[:500]
    assert "Invalid HTTP request" not in caplog.text and not failures_logged(caplog)


def test_a_turn_refused_by_the_daily_cap_is_one_reply_in_its_thread(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder,
) -> None:
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        daily_cost_cap_usd=0.000001) as capped:
        capped.model.push(api.text("The first answer, which spends the day's cap."))
        capped.mention("what is our deploy day?", "1700004000.000100")
        wait_until(lambda: streamed_text(capped, "1700004000.000100"))
        capped.mention("and the freeze?", "1700004000.000200")
        text = wait_until(lambda: streamed_text(capped, "1700004000.000200"))
        assert "spending limit" in text
        # The delivery is done once the turn has said all it will say.
        wait_until(lambda: capped.bridge.stores.inbox.waiting() == 0)
        assert len(capped.replies_in("1700004000.000200")) == 1


def test_one_bot_token_answers_with_sign_in_set_up_in_the_environment(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SLACK_CLIENT_ID and SLACK_CLIENT_SECRET exported (sign-in with Slack for the console
    and MCP) once made Bolt an OAuth app that ignored the bot token."""
    monkeypatch.setenv("SLACK_CLIENT_ID", "111.222")
    monkeypatch.setenv("SLACK_CLIENT_SECRET", "app-client-secret")
    with running_bridge(model_settings, fake_anthropic, hashing_embedder) as running:
        assert running.bridge.app.oauth_flow is None
        running.model.push(api.text("Answered with the bot token."))
        assert running.mention("are you there?", "1700004100.000100") == 200
        assert wait_until(lambda: streamed_text(running, "1700004100.000100"))
    assert os.environ["SLACK_CLIENT_ID"] == "111.222"  # put back after Bolt was built
