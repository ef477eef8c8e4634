"""The Slack fake, driven by the real ``slack_sdk`` ``WebClient``."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.models.blocks import SectionBlock
from slack_sdk.web import SlackResponse

from tests.servers.slack_api import FakeSlack

CHANNEL = "C100"
BLOCKS: list[dict[str, Any]] = [
    {"type": "section", "block_id": "b1", "text": {"type": "mrkdwn", "text": "*bold* move"}},
    {"type": "divider", "block_id": "b2"},
]


@pytest.fixture
def server() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        fake.add_channel(CHANNEL, "general")
        fake.add_user("U1", "dana")
        yield fake


def make_client(server: FakeSlack, token: str | None = "xoxb-test", **options: object) -> WebClient:
    return WebClient(token=token, base_url=server.url, timeout=5, **options)  # type: ignore[arg-type]


def slack_error(call: Callable[[], object]) -> SlackResponse:
    """The answer of a call the SDK turned into a ``SlackApiError``."""
    with pytest.raises(SlackApiError) as caught:
        call()
    response: SlackResponse = caught.value.response
    return response


# -- identity and auth ----------------------------------------------------------------


def test_auth_test_answers_the_bot_identity(server: FakeSlack) -> None:
    answer = make_client(server).auth_test()

    assert answer["ok"] is True
    assert (answer["user_id"], answer["bot_id"], answer["team_id"]) == ("UBOT", "BBOT", "T1")
    assert answer["user"] == "thoth" and answer["team"] == "Test Team"
    assert answer["url"] == "https://test.slack.com/"
    assert "chat:write" in answer.headers["x-oauth-scopes"]
    call = server.calls("auth.test")[0]
    assert call.headers["authorization"] == "Bearer xoxb-test"
    assert call.http_method == "POST" and call.path == "/api/auth.test"


def test_the_bot_user_id_is_configurable() -> None:
    with FakeSlack(bot_user_id="U0THOTH", bot_id="B0THOTH", team_id="T9") as fake:
        answer = make_client(fake).auth_test()
        assert (answer["user_id"], answer["bot_id"], answer["team_id"]) == (
            "U0THOTH", "B0THOTH", "T9",
        )
        assert make_client(fake).users_info(user="U0THOTH")["user"]["is_bot"] is True


def test_a_call_without_a_token_is_not_authed(server: FakeSlack) -> None:
    error = slack_error(lambda: make_client(server, token=None).chat_postMessage(
        channel=CHANNEL, text="hi"))

    assert error.status_code == 200
    assert error["error"] == "not_authed"
    assert "authorization" not in server.calls("chat.postMessage")[0].headers
    assert server.messages(CHANNEL) == []


def test_token_types_are_checked_per_method(server: FakeSlack) -> None:
    server.socket_url = "ws://127.0.0.1:9/link/?ticket=abc"
    app = make_client(server, token="xapp-1-test")

    assert app.apps_connections_open(app_token="xapp-1-test")["url"] == server.socket_url
    call = server.calls("apps.connections.open")[0]
    assert call.headers["authorization"] == "Bearer xapp-1-test"
    assert call.encoding == "none"  # the SDK moved the token from the form to the header
    assert slack_error(lambda: make_client(server).apps_connections_open(
        app_token="xoxb-test"))["error"] == "not_allowed_token_type"
    assert slack_error(app.auth_test)["error"] == "not_allowed_token_type"
    assert slack_error(make_client(server, token="nonsense").auth_test)["error"] == "invalid_auth"


def test_pinned_tokens_refuse_others() -> None:
    with FakeSlack(bot_token="xoxb-right") as fake:
        assert make_client(fake, token="xoxb-right").auth_test()["ok"]
        assert slack_error(make_client(fake, token="xoxb-wrong").auth_test)["error"] == (
            "invalid_auth"
        )


def test_unknown_methods_answer_unknown_method_with_http_200(server: FakeSlack) -> None:
    error = slack_error(lambda: make_client(server).api_call("chat.noSuchThing"))

    assert error.status_code == 200
    assert error["error"] == "unknown_method"


def test_query_strings_and_multipart_forms_are_parsed(server: FakeSlack) -> None:
    request = urllib.request.Request(
        server.url + "api.test?foo=bar&n=1", headers={"Authorization": "Bearer xoxb-test"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.loads(response.read()) == {"ok": True, "args": {"foo": "bar", "n": "1"}}
    client = make_client(server)

    echoed = client.api_call("api.test", data={"title": "notes"}, files={"file": b"\x00bytes"})

    assert echoed["args"] == {"title": "notes"}
    get, multipart = server.calls("api.test")
    assert (get.http_method, get.encoding, get.query) == ("GET", "none", {"foo": "bar", "n": "1"})
    assert multipart.encoding == "multipart"
    assert multipart.args == {"title": "notes", "file": b"\x00bytes"}
    assert slack_error(lambda: client.api_call("api.test", params={"error": "my_error"}))[
        "error"] == "my_error"


# -- messages -------------------------------------------------------------------------


def test_a_thread_reply_is_listed_by_conversations_replies(server: FakeSlack) -> None:
    client = make_client(server)
    parent = server.add_message(CHANNEL, "what is the plan?", user="U1")

    posted = client.chat_postMessage(channel=CHANNEL, text="here it is", thread_ts=parent)

    assert posted["channel"] == CHANNEL and posted["ts"] != parent
    assert posted["message"]["user"] == "UBOT" and posted["message"]["bot_id"] == "BBOT"
    replies = client.conversations_replies(channel=CHANNEL, ts=parent)
    assert [(m["user"], m["text"]) for m in replies["messages"]] == [
        ("U1", "what is the plan?"), ("UBOT", "here it is"),
    ]
    assert replies["messages"][0]["reply_count"] == 1
    assert replies["messages"][1]["thread_ts"] == parent
    assert replies["has_more"] is False
    assert [m["ts"] for m in server.messages(CHANNEL, thread_ts=parent)] == [parent, posted["ts"]]
    error = slack_error(lambda: client.conversations_replies(channel=CHANNEL, ts="1.000009"))
    assert error["error"] == "thread_not_found"


def test_replies_paginate_with_a_cursor(server: FakeSlack) -> None:
    client = make_client(server)
    parent = server.add_message(CHANNEL, "parent")
    for n in range(4):
        client.chat_postMessage(channel=CHANNEL, text=f"reply {n}", thread_ts=parent)

    # The SDK's pager re-fills and yields the same response object: read each page as it comes.
    pages = [[m["text"] for m in page["messages"]]
             for page in client.conversations_replies(channel=CHANNEL, ts=parent, limit=2)]

    assert pages == [["parent", "reply 0"], ["reply 1", "reply 2"], ["reply 3"]]
    first, second, third = (c.args.get("cursor") for c in server.calls("conversations.replies"))
    # Opaque cursors, each the next_cursor the page before gave; the last page has none.
    assert first is None and second and third and second != third
    assert not str(second).isdigit()
    last = client.conversations_replies(channel=CHANNEL, ts=parent, limit=2, cursor=third)
    assert last["has_more"] is False and last["response_metadata"]["next_cursor"] == ""
    error = slack_error(lambda: client.conversations_replies(channel=CHANNEL, ts=parent,
                                                             cursor="2"))
    assert error["error"] == "invalid_cursor"


THREAD = "1700000000.000100"
REPLIES = ("1700000000.000200", "1700000000.000300", "1700000000.000400", "1700000000.000500")


def _seed_thread(server: FakeSlack) -> None:
    server.add_message(CHANNEL, "parent", ts=THREAD)
    for number, ts in enumerate(REPLIES):
        server.add_message(CHANNEL, f"reply {number}", thread_ts=THREAD, ts=ts)


def test_replies_keep_to_oldest_and_latest_and_their_ends_only_with_inclusive(
    server: FakeSlack,
) -> None:
    client = make_client(server)
    _seed_thread(server)

    def listed(**bounds: Any) -> list[str]:
        answer = client.conversations_replies(channel=CHANNEL, ts=THREAD, **bounds)
        return [m["ts"] for m in answer["messages"]]

    # The parent leads the first page whatever the bounds; the replies keep to them.
    assert listed(oldest=REPLIES[1]) == [THREAD, *REPLIES[2:]]
    assert listed(oldest=REPLIES[1], inclusive=True) == [THREAD, *REPLIES[1:]]
    assert listed(oldest=REPLIES[0], latest=REPLIES[3]) == [THREAD, *REPLIES[1:3]]
    assert listed(oldest=REPLIES[0], latest=REPLIES[3], inclusive=True) == [THREAD, *REPLIES]
    assert listed(latest=REPLIES[1]) == [THREAD, REPLIES[0]]
    assert listed(oldest=REPLIES[3]) == [THREAD]
    assert listed(inclusive=True) == [THREAD, *REPLIES]  # ignored without a bound
    # ts may name any message of the thread: the whole thread is answered.
    named_by_a_reply = client.conversations_replies(channel=CHANNEL, ts=REPLIES[2])
    assert [m["ts"] for m in named_by_a_reply["messages"]] == [THREAD, *REPLIES]
    for bound, error in (("oldest", "invalid_ts_oldest"), ("latest", "invalid_ts_latest")):
        refused = slack_error(lambda bound=bound: client.conversations_replies(
            channel=CHANNEL, ts=THREAD, **{bound: "soon"}))
        assert refused["error"] == error


def test_replies_page_inside_the_bounds(server: FakeSlack) -> None:
    client = make_client(server)
    _seed_thread(server)

    pages = [[m["ts"] for m in page["messages"]] for page in
             client.conversations_replies(channel=CHANNEL, ts=THREAD, oldest=REPLIES[0], limit=2)]

    assert pages == [[THREAD, REPLIES[1]], [REPLIES[2], REPLIES[3]]]
    first = client.conversations_replies(channel=CHANNEL, ts=THREAD, oldest=REPLIES[0], limit=1)
    assert [m["ts"] for m in first["messages"]] == [THREAD]  # the parent counts toward limit
    assert first["has_more"] is True and first["response_metadata"]["next_cursor"]


def test_reading_a_thread_needs_the_history_scope_of_its_conversation_type() -> None:
    with FakeSlack(scopes="chat:write,im:history") as server:
        server.add_user("U1", "dana")
        for channel, kind in (("C1", "channel"), ("G1", "private"), ("M1", "mpim"),
                              ("D1", "im")):
            server.add_channel(channel, kind, kind)
            server.add_message(channel, "question", ts=THREAD)
        client = make_client(server)

        for channel, needed in (("C1", "channels:history"), ("G1", "groups:history"),
                                ("M1", "mpim:history")):
            refused = slack_error(lambda channel=channel: client.conversations_replies(
                channel=channel, ts=THREAD))
            assert refused["error"] == "missing_scope"
            assert (refused["needed"], refused["provided"]) == (needed, "chat:write,im:history")
        assert client.conversations_replies(channel="D1", ts=THREAD)["messages"][0]["ts"] == (
            THREAD)
        refused = slack_error(lambda: client.conversations_history(channel="C1"))
        assert refused["error"] == "missing_scope"

        # The scope granted (reinstalled with it), the thread reads; taken away, it does not.
        server.scopes = "chat:write,channels:history,im:history"
        answer = client.conversations_replies(channel="C1", ts=THREAD)
        assert answer["ok"] and "channels:history" in answer.headers["x-oauth-scopes"]
        server.scopes = "chat:write"
        refused = slack_error(lambda: client.conversations_replies(channel="D1", ts=THREAD))
        assert (refused["error"], refused["needed"]) == ("missing_scope", "im:history")


def test_reading_a_thread_needs_the_bot_in_the_conversation(server: FakeSlack) -> None:
    client = make_client(server)
    server.add_channel("C200", "announcements", is_member=False)
    server.add_channel("G300", "secret", kind="private", is_member=False)
    for channel in ("C200", "G300"):
        server.add_message(channel, "question", ts=THREAD)

    def error_of(channel: str) -> str:
        return str(slack_error(lambda: client.conversations_replies(channel=channel,
                                                                    ts=THREAD))["error"])

    assert error_of("C200") == "not_in_channel"
    assert error_of("G300") == "channel_not_found"  # the bot cannot tell it exists
    assert error_of("C999") == "channel_not_found"


def test_each_post_gets_a_fresh_increasing_ts(server: FakeSlack) -> None:
    client = make_client(server)
    stamps = [client.chat_postMessage(channel=CHANNEL, text=str(n))["ts"] for n in range(3)]

    assert len(set(stamps)) == 3 and stamps == sorted(stamps, key=float)
    assert [m["text"] for m in client.conversations_history(channel=CHANNEL)["messages"]] == [
        "2", "1", "0",
    ]


def test_blocks_survive_the_json_and_the_form_encodings(server: FakeSlack) -> None:
    client = make_client(server)

    as_json = client.chat_postMessage(channel=CHANNEL, text="fallback", blocks=BLOCKS)
    as_form = client.api_call("chat.postMessage", params={
        "channel": CHANNEL, "text": "fallback", "blocks": json.dumps(BLOCKS)})
    as_data = client.api_call("chat.postMessage", data={
        "channel": CHANNEL, "text": "fallback", "blocks": json.dumps(BLOCKS)})
    raw_json = client.api_call("chat.postMessage", json={
        "channel": CHANNEL, "text": "fallback", "blocks": BLOCKS})
    models = client.chat_postMessage(channel=CHANNEL, text="fallback",
                                     blocks=[SectionBlock(block_id="b1", text="hi")])

    encodings = [c.encoding for c in server.calls("chat.postMessage")]
    assert encodings == ["json", "form", "form", "json", "json"]
    form_call = server.calls("chat.postMessage")[1]
    assert form_call.args["blocks"] == json.dumps(BLOCKS)  # recorded as sent
    assert form_call.field("blocks") == BLOCKS  # and decoded on request
    for answer in (as_json, as_form, as_data, raw_json):
        assert answer["message"]["blocks"] == BLOCKS
        assert server.message(CHANNEL, answer["ts"])["blocks"] == BLOCKS  # type: ignore[index]
    assert models["message"]["blocks"][0]["text"] == {"type": "mrkdwn", "text": "hi"}
    assert slack_error(lambda: client.api_call("chat.postMessage", params={
        "channel": CHANNEL, "blocks": "[not json"}))["error"] == "invalid_blocks_format"
    assert slack_error(lambda: client.api_call(
        "chat.postMessage", json={"channel": CHANNEL}))["error"] == "no_text"


def test_update_changes_the_stored_text_and_delete_removes_it(server: FakeSlack) -> None:
    client = make_client(server)
    ts = client.chat_postMessage(channel=CHANNEL, text="draft")["ts"]

    updated = client.chat_update(channel=CHANNEL, ts=ts, text="final", blocks=BLOCKS)

    assert updated["text"] == "final" and updated["ts"] == ts
    stored = server.message(CHANNEL, ts)
    assert stored is not None and stored["text"] == "final" and stored["blocks"] == BLOCKS
    assert "edited" in stored
    someone_elses = server.add_message(CHANNEL, "mine", user="U1")
    assert slack_error(lambda: client.chat_update(
        channel=CHANNEL, ts=someone_elses, text="x"))["error"] == "cant_update_message"
    assert slack_error(lambda: client.chat_update(
        channel=CHANNEL, ts="1.000999", text="x"))["error"] == "message_not_found"

    assert client.chat_delete(channel=CHANNEL, ts=ts)["ts"] == ts
    assert server.message(CHANNEL, ts) is None


def test_ephemeral_messages_are_kept_apart_with_their_user(server: FakeSlack) -> None:
    client = make_client(server)

    answer = client.chat_postEphemeral(channel=CHANNEL, user="U1", text="only you", blocks=BLOCKS)

    assert answer["message_ts"]
    [ephemeral] = server.ephemerals(CHANNEL)
    assert (ephemeral["user"], ephemeral["text"], ephemeral["blocks"]) == ("U1", "only you", BLOCKS)
    assert server.messages(CHANNEL) == []


def test_permalinks_point_at_the_message_and_its_thread(server: FakeSlack) -> None:
    client = make_client(server)
    parent = client.chat_postMessage(channel=CHANNEL, text="top")["ts"]
    reply = client.chat_postMessage(channel=CHANNEL, text="in thread", thread_ts=parent)["ts"]

    top_link = client.chat_getPermalink(channel=CHANNEL, message_ts=parent)
    reply_link = client.chat_getPermalink(channel=CHANNEL, message_ts=reply)["permalink"]

    assert top_link["channel"] == CHANNEL
    assert top_link["permalink"] == (
        f"https://test.slack.com/archives/{CHANNEL}/p{parent.replace('.', '')}"
    )
    assert reply_link.endswith(f"?thread_ts={parent}&cid={CHANNEL}")


# -- streaming and assistant status ---------------------------------------------------


def test_start_append_stop_stream_builds_the_final_text(server: FakeSlack) -> None:
    client = make_client(server)
    parent = server.add_message(CHANNEL, "question", user="U1")

    started = client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="Hel",
                                      recipient_user_id="U1", recipient_team_id="T1")
    ts = started["ts"]
    client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="lo, ")
    stopped = client.chat_stopStream(channel=CHANNEL, ts=ts, markdown_text="world!",
                                     blocks=BLOCKS)

    assert started["channel"] == CHANNEL
    assert stopped["message"]["text"] == "Hello, world!"
    stored = server.message(CHANNEL, ts)
    assert stored is not None and stored["thread_ts"] == parent and stored["blocks"] == BLOCKS
    assert server.stream(CHANNEL, ts) == {"state": "stopped", "chunks": []}
    assert [c.encoding for c in server.calls()] == ["json", "json", "json"]
    error = slack_error(lambda: client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="x"))
    assert error["error"] == "message_not_in_streaming_state"


def test_the_chat_stream_helper_sends_markdown_chunks(server: FakeSlack) -> None:
    client = make_client(server)
    parent = server.add_message(CHANNEL, "question", user="U1")

    streamer = client.chat_stream(channel=CHANNEL, thread_ts=parent, buffer_size=5,
                                  recipient_user_id="U1", recipient_team_id="T1")
    assert streamer.append(markdown_text="Hi") is None  # buffered, nothing sent yet
    streamer.append(markdown_text=" there")  # buffer reached 5: chat.startStream
    streamer.append(markdown_text=", friend")  # chat.appendStream
    streamer.stop(markdown_text=".")  # chat.stopStream

    assert [c.method for c in server.calls()] == [
        "chat.startStream", "chat.appendStream", "chat.stopStream",
    ]
    start = server.calls("chat.startStream")[0]
    assert start.args["chunks"] == [{"type": "markdown_text", "text": "Hi there"}]
    assert "markdown_text" not in start.args
    assert server.message(CHANNEL, str(streamer.ts))["text"] == "Hi there, friend."  # type: ignore[index]
    assert server.stream(CHANNEL, str(streamer.ts))["state"] == "stopped"  # type: ignore[index]


def test_assistant_status_is_recorded(server: FakeSlack) -> None:
    client = make_client(server)

    client.assistant_threads_setStatus(channel_id="D1", thread_ts="1.000001",
                                       status="is thinking...",
                                       loading_messages=["Reading", "Writing"])
    client.assistant_threads_setStatus(channel_id="D1", thread_ts="1.000001", status="")

    assert server.statuses() == [
        {"channel_id": "D1", "thread_ts": "1.000001", "status": "is thinking...",
         "loading_messages": ["Reading", "Writing"]},
        {"channel_id": "D1", "thread_ts": "1.000001", "status": "", "loading_messages": None},
    ]


# -- reactions, users, channels -------------------------------------------------------


def test_reactions_are_added_and_removed_per_message(server: FakeSlack) -> None:
    client = make_client(server)
    ts = server.add_message(CHANNEL, "please look", user="U1")

    client.reactions_add(channel=CHANNEL, timestamp=ts, name="eyes")
    client.reactions_add(channel=CHANNEL, timestamp=ts, name="white_check_mark")
    assert server.reactions_on(CHANNEL, ts) == ["eyes", "white_check_mark"]
    assert slack_error(lambda: client.reactions_add(
        channel=CHANNEL, timestamp=ts, name="eyes"))["error"] == "already_reacted"

    client.reactions_remove(channel=CHANNEL, timestamp=ts, name="eyes")
    assert server.reactions_on(CHANNEL, ts) == ["white_check_mark"]
    assert server.message(CHANNEL, ts)["reactions"] == [  # type: ignore[index]
        {"name": "white_check_mark", "users": ["UBOT"], "count": 1},
    ]
    assert slack_error(lambda: client.reactions_remove(
        channel=CHANNEL, timestamp=ts, name="eyes"))["error"] == "no_reaction"
    assert server.calls("reactions.add")[0].args == {
        "channel": CHANNEL, "timestamp": ts, "name": "eyes",
    }


def test_users_info_answers_from_the_table(server: FakeSlack) -> None:
    server.add_user("U1", "ada", real_name="Ada Lovelace", display_name="Ada")
    client = make_client(server)

    user = client.users_info(user="U1")["user"]

    assert (user["id"], user["name"], user["real_name"], user["is_bot"]) == (
        "U1", "ada", "Ada Lovelace", False,
    )
    assert user["profile"]["display_name"] == "Ada"
    assert user["profile"]["real_name"] == "Ada Lovelace"
    assert slack_error(lambda: client.users_info(user="U404"))["error"] == "user_not_found"


def test_conversations_info_answers_from_the_table(server: FakeSlack) -> None:
    server.add_channel("D1", "ada-dm", "im")
    server.add_channel("C1", "general")
    client = make_client(server)

    dm = client.conversations_info(channel="D1")["channel"]
    general = client.conversations_info(channel="C1")["channel"]

    assert (dm["is_im"], dm["is_private"], dm["is_mpim"]) == (True, True, False)
    assert (general["name"], general["is_im"], general["is_private"]) == ("general", False, False)
    assert slack_error(lambda: client.conversations_info(channel="C404"))["error"] == (
        "channel_not_found"
    )


# -- faults ---------------------------------------------------------------------------


def test_a_429_is_retried_by_the_rate_limit_handler(server: FakeSlack) -> None:
    server.fail_next("chat.postMessage", status=429, retry_after=0)
    client = make_client(server, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)])

    answer = client.chat_postMessage(channel=CHANNEL, text="eventually")

    assert answer["ok"] is True
    assert len(server.calls("chat.postMessage")) == 2
    assert [m["text"] for m in server.messages(CHANNEL)] == ["eventually"]


def test_a_429_without_a_handler_raises_with_retry_after(server: FakeSlack) -> None:
    server.fail_next("chat.postMessage", status=429, retry_after=7)

    error = slack_error(lambda: make_client(server).chat_postMessage(channel=CHANNEL, text="x"))

    assert error.status_code == 429
    assert error["error"] == "ratelimited"
    assert error.headers["Retry-After"] == "7"
    assert server.messages(CHANNEL) == []
    assert make_client(server).chat_postMessage(channel=CHANNEL, text="x")["ok"]  # one only


def test_a_500_is_retried_by_the_server_error_handler(server: FakeSlack) -> None:
    server.fail_next("users.info", status=500)
    server.add_user("U1", "ada")
    quick = FixedValueRetryIntervalCalculator(0.01)
    client = make_client(server, retry_handlers=[
        ServerErrorRetryHandler(max_retry_count=1, interval_calculator=quick)])

    assert client.users_info(user="U1")["user"]["name"] == "ada"
    assert len(server.calls("users.info")) == 2

    server.fail_next("users.info", status=503, count=2)
    error = slack_error(lambda: client.users_info(user="U1"))  # one retry is not enough
    assert error.status_code == 503
    assert error["error"] == "service_unavailable"


def test_a_scripted_slack_error_answers_http_200(server: FakeSlack) -> None:
    server.fail_next(None, status=200, error="channel_not_found")

    error = slack_error(lambda: make_client(server).chat_postMessage(channel="C9", text="x"))

    assert error.status_code == 200
    assert error["error"] == "channel_not_found"


def test_delay_next_holds_the_answer(server: FakeSlack) -> None:
    server.delay_next("auth.test", 0.3)
    client = make_client(server)

    started = time.monotonic()
    client.auth_test()
    held = time.monotonic() - started
    started = time.monotonic()
    client.auth_test()

    assert held >= 0.3
    assert time.monotonic() - started < 0.3


def test_wait_for_call_sees_calls_from_another_thread(server: FakeSlack) -> None:
    client = make_client(server)
    worker = threading.Thread(target=lambda: [
        client.chat_postMessage(channel=CHANNEL, text=str(n)) for n in range(2)])

    worker.start()
    calls = server.wait_for_call("chat.postMessage", count=2, timeout_s=5)
    worker.join(timeout=5)

    assert [c.args["text"] for c in calls] == ["0", "1"]
    with pytest.raises(AssertionError):
        server.wait_for_call("reactions.add", timeout_s=0.05)


# -- what Slack's method reference says it refuses --------------------------------------


def test_content_over_slacks_limits_is_refused(server: FakeSlack) -> None:
    client = make_client(server)

    def refused(**args: Any) -> str:
        return str(slack_error(lambda: client.chat_postMessage(channel=CHANNEL, **args))["error"])

    assert refused(markdown_text="x" * 12_001) == "msg_too_long"
    assert refused(text="x" * 40_001) == "msg_too_long"
    assert refused(text="both", markdown_text="both") == "markdown_text_conflict"
    assert refused(blocks=[{"type": "divider"}] * 51, text="many") == "invalid_blocks"
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3_001}}
    assert refused(blocks=[section], text="long section") == "invalid_blocks"
    markdown = [{"type": "markdown", "text": "x" * 6_001}] * 2
    assert refused(blocks=markdown, text="two long markdown blocks") == "msg_blocks_too_long"
    with pytest.warns(UserWarning):  # the SDK warns of a message without text, too
        assert refused() == "no_text"
    posted = client.chat_postMessage(channel=CHANNEL, markdown_text="x" * 12_000)
    error = slack_error(lambda: client.chat_update(channel=CHANNEL, ts=posted["ts"],
                                                   text="y" * 4_001))
    assert error["error"] == "msg_too_long"


def test_only_channels_the_bot_is_in_take_its_messages(server: FakeSlack) -> None:
    client = make_client(server)
    server.add_channel("C200", "announcements", is_member=False)
    server.add_channel("G300", "secret", kind="private", is_member=False)
    server.add_channel("C400", "team", members=["UBOT", "U1"])

    def error_of(call: Callable[[], object]) -> str:
        return str(slack_error(call)["error"])

    assert error_of(lambda: client.chat_postMessage(channel="C200", text="x")) == "not_in_channel"
    assert error_of(lambda: client.chat_postMessage(channel="G300", text="x")) == (
        "channel_not_found")
    assert error_of(lambda: client.chat_postMessage(channel="C999", text="x")) == (
        "channel_not_found")
    assert client.chat_postEphemeral(channel="C400", user="U1", text="x")["ok"]
    server.add_user("U2", "ari")
    assert error_of(lambda: client.chat_postEphemeral(channel="C400", user="U2", text="x")) == (
        "user_not_in_channel")
    assert client.chat_postMessage(channel="U1", text="a DM opened by user id")["ok"]


def test_streams_need_recipients_in_channels_and_end_when_the_person_stops(
    server: FakeSlack,
) -> None:
    client = make_client(server)
    parent = server.add_message(CHANNEL, "question", user="U1")
    error = slack_error(lambda: client.chat_startStream(channel=CHANNEL, thread_ts=parent,
                                                        markdown_text="Hi"))
    assert error["error"] == "missing_recipient_team_id"
    ts = client.chat_startStream(channel=CHANNEL, thread_ts=parent, markdown_text="Hi",
                                 recipient_team_id="T1", recipient_user_id="U1")["ts"]
    error = slack_error(lambda: client.chat_update(channel=CHANNEL, ts=ts, text="edit"))
    assert error["error"] == "streaming_state_conflict"
    bad_chunk = [{"type": "task_update", "id": "t1", "title": "x", "status": "done"}]
    error = slack_error(lambda: client.chat_appendStream(channel=CHANNEL, ts=ts,
                                                         chunks=bad_chunk))
    assert error["error"] == "invalid_chunks"

    server.stop_stream_by_user(CHANNEL, ts)
    error = slack_error(lambda: client.chat_appendStream(channel=CHANNEL, ts=ts,
                                                         markdown_text="more"))
    assert error["error"] == "stopped_by_user"
    error = slack_error(lambda: client.chat_stopStream(channel=CHANNEL, ts=ts))
    assert error["error"] == "message_not_in_streaming_state"
    assert server.message(CHANNEL, ts)["text"] == "Hi"  # type: ignore[index]


def test_rate_tiers_answer_429_with_retry_after(server: FakeSlack) -> None:
    client = make_client(server)
    for number in range(10):  # chat.postMessage: a burst, then about one a second
        client.chat_postMessage(channel=CHANNEL, text=f"message {number}")
    error = slack_error(lambda: client.chat_postMessage(channel=CHANNEL, text="one too many"))
    assert error.status_code == 429 and error["error"] == "ratelimited"
    assert int(error.headers["Retry-After"]) >= 1
    server.add_channel("C500", "elsewhere")
    assert client.chat_postMessage(channel="C500", text="another channel")["ok"]


def test_suggested_prompts_and_titles_need_their_arguments(server: FakeSlack) -> None:
    client = make_client(server)
    server.add_channel("D1", "", kind="im")
    prompts = [{"title": f"t{n}", "message": f"m{n}"} for n in range(5)]
    error = slack_error(lambda: client.assistant_threads_setSuggestedPrompts(
        channel_id="D1", thread_ts="1.000001", prompts=prompts))
    assert error["error"] == "invalid_arguments"
    client.assistant_threads_setSuggestedPrompts(channel_id="D1", thread_ts="1.000001",
                                                 prompts=prompts[:4])
    client.assistant_threads_setTitle(channel_id="D1", thread_ts="1.000001", title="Roadmap")
    assert server.titles() == [{"channel_id": "D1", "thread_ts": "1.000001",
                                "title": "Roadmap"}]
    assert len(server.suggested_prompts()[0]["prompts"]) == 4
