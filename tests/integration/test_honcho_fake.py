"""The Honcho fake, driven by the real ``honcho-ai`` SDK (sync and ``.aio``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from honcho import (
    AuthenticationError,
    Honcho,
    NotFoundError,
    ServerError,
    TimeoutError,
    UnprocessableEntityError,
)

from tests.servers.honcho_api import MAX_MESSAGE_CHARS, FakeHoncho

WS = "ws"


@pytest.fixture
def server() -> Iterator[FakeHoncho]:
    with FakeHoncho() as fake:
        yield fake


def make_client(server: FakeHoncho, timeout: float = 5.0, max_retries: int = 0) -> Honcho:
    return Honcho(
        api_key="k",
        base_url=server.url,
        workspace_id=WS,
        timeout=timeout,
        max_retries=max_retries,
    )


# -- messages -------------------------------------------------------------------------


def test_added_messages_are_stored_and_listed_with_their_peers(server: FakeHoncho) -> None:
    honcho = make_client(server)
    alice, bob = honcho.peer("alice"), honcho.peer("bob")
    session = honcho.session("s1")

    created = session.add_messages([alice.message("hello bob"), bob.message("hi alice")])

    assert [(m.peer_id, m.content) for m in created] == [
        ("alice", "hello bob"), ("bob", "hi alice"),
    ]
    listed = list(session.messages())
    assert [(m.peer_id, m.content, m.session_id) for m in listed] == [
        ("alice", "hello bob", "s1"), ("bob", "hi alice", "s1"),
    ]
    assert all(m.workspace_id == WS and m.token_count > 0 for m in listed)
    newest_first = session.messages(reverse=True)
    assert [m.content for m in newest_first] == ["hi alice", "hello bob"]
    assert [m["peer_id"] for m in server.stored_messages(WS, "s1")] == ["alice", "bob"]
    # Messages add their authors to the session, as Honcho does.
    assert sorted(p.id for p in session.peers()) == ["alice", "bob"]

    [add] = [r for r in server.requests_to("/sessions/s1/messages", "POST")
             if r.path == "/v3/workspaces/ws/sessions/s1/messages"]
    assert add.headers["authorization"] == "Bearer k"
    assert add.body == {"messages": [
        {"content": "hello bob", "peer_id": "alice"}, {"content": "hi alice", "peer_id": "bob"},
    ]}
    assert server.requests[0].path == "/v3/workspaces"
    assert server.requests[0].body == {"id": WS}


def test_added_messages_are_listed_back_async(server: FakeHoncho) -> None:
    async def scenario() -> list[tuple[str, str]]:
        honcho = make_client(server)
        alice = await honcho.aio.peer("alice")
        bob = await honcho.aio.peer("bob")
        session = await honcho.aio.session("s2")
        await session.aio.add_peers([alice, bob])
        await session.aio.add_messages([alice.message("ping"), bob.message("pong")])
        page = await session.aio.messages()
        return [(m.peer_id, m.content) async for m in page]

    assert asyncio.run(scenario()) == [("alice", "ping"), ("bob", "pong")]


def test_message_listing_pages_and_filters(server: FakeHoncho) -> None:
    honcho = make_client(server)
    alice, bob = honcho.peer("alice"), honcho.peer("bob")
    session = honcho.session("s1")
    session.add_messages([(alice if i % 2 else bob).message(f"m{i}") for i in range(7)])

    first = session.messages(size=3)
    assert (first.total, first.pages, len(first)) == (7, 3, 3)
    assert [m.content for m in first] == [f"m{i}" for i in range(7)]  # follows the pages
    only_alice = session.messages(filters={"peer_id": "alice"})
    assert [m.content for m in only_alice] == ["m1", "m3", "m5"]


def test_message_batches_and_sizes_are_limited_like_honcho(server: FakeHoncho) -> None:
    honcho = make_client(server)
    alice = honcho.peer("alice")
    session = honcho.session("s1")

    with pytest.raises(UnprocessableEntityError) as too_many:
        session.add_messages([alice.message(f"m{i}") for i in range(101)])
    assert too_many.value.status == 422
    with pytest.raises(UnprocessableEntityError) as too_long:
        session.add_messages(alice.message("x" * (MAX_MESSAGE_CHARS + 1)))
    assert too_long.value.body["detail"][0]["loc"] == ["body", "messages", 0, "content"]
    assert server.stored_messages(WS) == []

    assert len(session.add_messages([alice.message(f"m{i}") for i in range(100)])) == 100
    assert len(session.add_messages(alice.message("x" * MAX_MESSAGE_CHARS))) == 1


# -- chat, conclusions, representation ------------------------------------------------------


def test_chat_answers_from_what_was_stored(server: FakeHoncho) -> None:
    honcho = make_client(server)
    assistant, user = honcho.peer("assistant"), honcho.peer("user")
    session = honcho.session("s1")
    session.add_messages([user.message("I keep bees in Lyon"), assistant.message("Nice!")])
    assistant.conclusions_of(user).create([{"content": "User keeps bees"}])

    answer = assistant.chat("What does the user do?", session=session, target=user)

    assert answer is not None
    assert "User keeps bees" in answer
    assert "I keep bees in Lyon" in answer
    assert "Nice!" not in answer  # only what the target said
    [chat] = server.requests_to("/peers/assistant/chat")
    assert chat.body == {
        "query": "What does the user do?", "stream": False, "target": "user", "session_id": "s1",
    }


def test_chat_async_and_scripted(server: FakeHoncho) -> None:
    async def scenario() -> tuple[str | None, str | None, str | None]:
        honcho = make_client(server)
        user = await honcho.aio.peer("user")
        session = await honcho.aio.session("s1")
        await session.aio.add_messages(user.message("my cat is called Miso"))
        stored = await user.aio.chat("What is my cat called?", session=session)
        server.script_chat("Scripted answer", None)
        scripted = await user.aio.chat("anything")
        empty = await user.aio.chat("anything")
        return stored, scripted, empty

    stored, scripted, empty = asyncio.run(scenario())
    assert stored is not None and "my cat is called Miso" in stored
    assert scripted == "Scripted answer"
    assert empty is None  # the SDK turns empty content into None


def test_conclusions_feed_representation_and_context(server: FakeHoncho) -> None:
    honcho = make_client(server)
    assistant, user = honcho.peer("assistant"), honcho.peer("user")
    session = honcho.session("s1")
    about_user = assistant.conclusions_of(user)

    made = about_user.create([
        {"content": "User prefers tea", "session_id": session.id},
        {"content": "User works nights"},
    ])

    assert [(c.observer_id, c.observed_id, c.session_id) for c in made] == [
        ("assistant", "user", "s1"), ("assistant", "user", None),
    ]
    [create] = server.requests_to("/conclusions", "POST")
    assert create.body == {"conclusions": [
        {"observer_id": "assistant", "observed_id": "user", "content": "User prefers tea",
         "session_id": "s1"},
        {"observer_id": "assistant", "observed_id": "user", "content": "User works nights"},
    ]}
    representation = assistant.representation(target=user)
    assert "User prefers tea" in representation and "User works nights" in representation
    in_session = assistant.representation(session=session, target=user)
    assert "User prefers tea" in in_session and "User works nights" not in in_session
    context = assistant.context(target=user)
    assert (context.peer_id, context.target_id) == ("assistant", "user")
    assert context.representation is not None and "User prefers tea" in context.representation
    assert user.representation() == ""  # nothing the user concluded about themselves

    listed = about_user.list()
    # One batch, one creation time: Honcho lists them in no fixed order.
    assert sorted(c.content for c in listed) == ["User prefers tea", "User works nights"]
    about_user.delete(made[0].id)
    assert "User prefers tea" not in assistant.representation(target=user)
    with pytest.raises(NotFoundError):
        about_user.delete(made[0].id)


def test_conclusions_feed_representation_and_context_async(server: FakeHoncho) -> None:
    async def scenario() -> tuple[str, str | None, list[str], list[str]]:
        honcho = make_client(server)
        user = await honcho.aio.peer("user")
        await user.conclusions.aio.create([{"content": "Likes hiking"}])
        representation = await user.aio.representation()
        context = await user.aio.context()
        listed = [c.content async for c in await user.conclusions.aio.list()]
        [only] = await user.conclusions.aio.list()
        await user.conclusions.aio.delete(only.id)
        after = [c.content async for c in await user.conclusions.aio.list()]
        return representation, context.representation, listed, after

    representation, context, listed, after = asyncio.run(scenario())
    assert "Likes hiking" in representation
    assert context is not None and "Likes hiking" in context
    assert (listed, after) == (["Likes hiking"], [])


def test_conclusions_need_known_peers_and_sessions(server: FakeHoncho) -> None:
    assistant = make_client(server).peer("assistant")
    with pytest.raises(NotFoundError):
        assistant.conclusions_of("stranger").create([{"content": "Is new here"}])
    with pytest.raises(NotFoundError):
        assistant.conclusions.create([{"content": "Is new here", "session_id": "nope"}])
    assert server.stored_conclusions(WS) == []


def test_streamed_chat_and_session_context(server: FakeHoncho) -> None:
    honcho = make_client(server)
    user, bot = honcho.peer("user"), honcho.peer("bot")
    session = honcho.session("s1")
    session.add_messages([user.message("one two three"), bot.message("four five")])
    bot.conclusions_of(user).create([{"content": "Counts aloud"}])

    assert "one two three" in "".join(user.chat_stream("what did I say?"))
    context = session.context(tokens=2, peer_target="user", peer_perspective="bot")
    assert [m.content for m in context.messages] == ["four five"]  # newest within budget
    assert context.peer_representation is not None
    assert "Counts aloud" in context.peer_representation


# -- validation and auth --------------------------------------------------------------------


def test_an_id_with_a_colon_is_refused_with_422(server: FakeHoncho) -> None:
    honcho = make_client(server)
    with pytest.raises(UnprocessableEntityError) as peer_error:
        honcho.peer("T1:U1")
    assert peer_error.value.status == 422
    assert peer_error.value.body["detail"][0]["loc"] == ["body", "id"]
    with pytest.raises(UnprocessableEntityError):
        honcho.session("C1:1712.55")
    with pytest.raises(UnprocessableEntityError):
        honcho.peer("ok").chat("hi", target="T1:U1")
    with pytest.raises(UnprocessableEntityError):
        Honcho(api_key="k", base_url=server.url, workspace_id="w:1", max_retries=0).peer("a")

    async def async_peer() -> None:
        await make_client(server).aio.peer("T1:U1")

    with pytest.raises(UnprocessableEntityError):
        asyncio.run(async_peer())
    assert sorted(server.workspaces[WS].peers) == ["ok"]


def test_requests_without_a_bearer_key_are_refused(server: FakeHoncho) -> None:
    keyless = Honcho(base_url=server.url, workspace_id=WS, max_retries=0)  # env cleared
    with pytest.raises(AuthenticationError):
        keyless.peer("alice")
    assert "authorization" not in server.requests[-1].headers


# -- faults ---------------------------------------------------------------------------------


def test_an_injected_500_raises_and_the_next_call_succeeds(server: FakeHoncho) -> None:
    honcho = make_client(server)
    user = honcho.peer("user")
    server.fail_next(500)

    with pytest.raises(ServerError) as error:
        user.chat("hello?")
    assert error.value.status == 500
    assert user.chat("hello?") is not None


def test_an_injected_500_async_then_success(server: FakeHoncho) -> None:
    async def scenario() -> str:
        honcho = make_client(server)
        user = await honcho.aio.peer("user")
        server.fail_next(502, match="/representation")
        await user.conclusions.aio.create([{"content": "Has a dog"}])  # not matched
        with pytest.raises(ServerError):
            await user.aio.representation()
        return await user.aio.representation()

    assert "Has a dog" in asyncio.run(scenario())


def test_sdk_retries_honour_retry_after(server: FakeHoncho) -> None:
    honcho = make_client(server, max_retries=2)
    honcho.peer("user")
    before = len(server.requests)
    server.fail_next(503, count=2, retry_after=0)

    assert honcho.peer("user").id == "user"
    assert len(server.requests) - before == 3


def test_a_delay_longer_than_the_timeout_raises_timeout(server: FakeHoncho) -> None:
    honcho = make_client(server, timeout=0.2)
    user = honcho.peer("user")
    server.delay_next(2.0)

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        user.chat("slow?")
    assert time.monotonic() - started < 1.5
    assert user.chat("fast?") is not None


def test_a_delay_longer_than_the_timeout_raises_timeout_async(server: FakeHoncho) -> None:
    async def scenario() -> None:
        honcho = make_client(server, timeout=0.2)
        user = await honcho.aio.peer("user")
        server.delay_all(0.5)
        with pytest.raises(TimeoutError):
            await user.aio.chat("slow?")
        server.delay_all(0)
        assert await user.aio.chat("fast?") is not None

    asyncio.run(scenario())


def test_a_per_call_timeout_and_a_short_delay(server: FakeHoncho) -> None:
    honcho = make_client(server, timeout=5.0)
    user = honcho.peer("user")
    server.delay_next(0.05, match="/chat")
    assert user.chat("a bit slow", timeout=2.0) is not None
    server.delay_next(1.0, match="/chat")
    with pytest.raises(TimeoutError):
        user.chat("too slow", timeout=0.1)


def test_hang_holds_requests_until_shutdown() -> None:
    with FakeHoncho() as server:
        honcho = make_client(server, timeout=0.2)
        honcho.peer("user")
        server.hang()
        with pytest.raises(TimeoutError):
            honcho.peer("user")
        server.wait_for_requests(3)
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 2.0
