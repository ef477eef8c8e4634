"""One turn end to end, through the real anthropic SDK against the loopback Messages API."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anthropic
import pytest

from bridge import messages
from bridge.app import Thoth, build
from bridge.model.anthropic_model import AnthropicModel
from bridge.model.catalogue import DEFAULT_PRICES
from bridge.model.pricing import Usage
from bridge.model.retrying import RetryingModel
from bridge.pipeline.answering import MAX_TOOL_ROUNDS
from bridge.pipeline.context.user_model import UserModel
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

PLACE = Place("T1", "C1", "public", None, "general")


def ask(app: Thoth, text: str, *, key: str = "s1", user: str = "U1") -> TurnOutcome:
    return converse(app, [(key, text)], user=user)[0]


def converse(app: Thoth, turns: list[tuple[str, str]], *, user: str = "U1") -> list[TurnOutcome]:
    """Run turns one after another in one event loop, as a transport does."""

    async def run() -> list[TurnOutcome]:
        return [await _ask(app, text, key=key, user=user) for key, text in turns]

    return asyncio.run(run())


async def _ask(app: Thoth, text: str, *, key: str, user: str) -> TurnOutcome:
    outcome = await app.pipeline.handle(
        Turn(key, text, PLACE, user=user, user_name="Dana"), RecordingSink()
    )
    await app.pipeline.drain(10)
    return outcome


@pytest.fixture
def app(model_settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(model_settings, embedder=hashing_embedder)
    yield thoth
    thoth.close()


def test_request_carries_the_prompt_in_order_with_cache_marks(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.text("Deploys happen on Fridays."))
    outcome = ask(app, "When do we deploy?")

    assert outcome.ok and outcome.reply == "Deploys happen on Fridays."
    (request,) = fake_anthropic.requests
    assert request.path == "/v1/messages"
    assert "sk-ant-test-key" in (
        request.headers.get("x-api-key", ""),
        request.headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert request.headers["anthropic-version"]
    assert request.body["stream"] is True
    assert request.body["model"] == "claude-opus-5-5"  # the reference's recommendation
    system = request.body["system"]
    texts = request.context_texts()
    # persona, skill index, slack context — in that order.
    assert "You are Thoth" in texts[0]
    order = [texts[0].index(f'name="{name}"') for name in ("IDENTITY.md", "SOUL.md", "TOOLS.md")]
    assert order == sorted(order)
    assert texts[1].startswith("<skill-index>")
    assert texts[2].startswith("<slack-context>") and "#general" in texts[2]
    assert "speaker: Dana (U1)" in texts[2]
    # One breakpoint ends the stable part (the persona's own would be redundant).
    assert "cache_control" not in system[0]
    assert system[1]["cache_control"] == {"type": "ephemeral"}
    # The turn's context heads its message, after the cached part, the words last.
    assert len(system) == 2
    (message,) = request.body["messages"]
    assert message["role"] == "user" and message["content"][-1] == {
        "type": "text", "text": "When do we deploy?"}
    assert message["content"][0]["text"] == texts[2]
    assert [tool["name"] for tool in request.body["tools"]] == [
        "recall",
        "get_skill",
        "what_do_you_know_about_me",
        "forget_about_me",
    ]
    # The skill index lists the brain's skills, one line each.
    assert "- incident-summary: Turn an incident thread" in texts[1]


def test_related_episodes_on_the_first_turn_of_a_new_session_only(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    converse(
        app,
        [
            ("first", "We agreed the staging database migrates every Tuesday."),
            ("first", "Also the release train leaves on Thursdays."),
            ("second", "When does the staging database migrate?"),
            ("second", "Thanks, and who owns it?"),
        ],
    )
    first, later = fake_anthropic.requests[2:]
    related = [t for t in first.context_texts() if t.startswith("<related-episodes>")]
    assert len(related) == 1
    assert "staging database migrates every Tuesday" in related[0]
    assert "Dana" in related[0] and "20" in related[0]  # speaker and a dated line
    assert first.context_texts().index(related[0]) == len(first.context_texts()) - 1
    assert not any(t.startswith("<related-episodes>") for t in later.context_texts())
    # The later turn carries the session's transcript instead.
    assert [m["role"] for m in later.body["messages"]] == ["user", "assistant", "user"]
    assert later.conversation()[0]["content"] == "When does the staging database migrate?"


def test_text_streams_to_the_sink_line_by_line(app: Thoth, fake_anthropic: FakeAnthropic) -> None:
    # Released a line at a time: a line is redacted whole before it is shown.
    reply = "One,\ntwo,\nthree,\nfour."
    fake_anthropic.push(api.text(reply, chunk_chars=3))
    sink = RecordingSink()

    async def run() -> TurnOutcome:
        return await app.pipeline.handle(Turn("s", "count", PLACE, user="U1"), sink)

    outcome = asyncio.run(run())
    assert sink.pieces == ["One,\n", "two,\n", "three,\n", "four."]
    assert sink.events[0] == ("thinking", "")
    assert sink.events[-1] == ("finish", reply)
    assert outcome.timings.shown >= outcome.timings.last_token


def test_429_500_529_are_retried_then_the_answer_arrives(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.error(429), api.error(500), api.error(529), api.text("Finally."))
    outcome = ask(app, "Are you there?")
    assert outcome.ok and outcome.reply == "Finally."
    assert len(fake_anthropic.requests) == 4
    assert app.episodic.store.count() == 1


def test_after_the_last_retry_the_user_gets_one_honest_message_and_nothing_is_stored(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    # The next turn is the overloaded API's next probe (bridge/model/overload.py) at once.
    app = build(model_settings.model_copy(update={"model_probe_every_s": 1e-6}),
                embedder=hashing_embedder)
    fake_anthropic.push(*[api.error(529)] * 4)
    outcome, _ = converse(app, [("s1", "Are you there?"), ("s1", "Hello again")])

    assert not outcome.ok
    assert outcome.reply == messages.MODEL_FAILED
    assert outcome.episode_id is None
    assert len(fake_anthropic.requests) == 5
    assert app.episodic.store.count() == 1
    # The message is kept in the transcript, but the failed turn is not replayed.
    kept = app.transcript.turns(outcome.session_id)[0]
    assert kept.user_text == "Are you there?" and not kept.ok
    assert fake_anthropic.requests[-1].conversation() == [
        {"role": "user", "content": "Hello again"}
    ]
    app.close()


def test_a_client_error_is_not_retried(app: Thoth, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.push(api.error(400))
    outcome = ask(app, "Hi")
    assert not outcome.ok and len(fake_anthropic.requests) == 1


def test_an_overloaded_error_inside_the_stream_fails_without_a_repeat(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    # Text already reached the user, so a retry would show it twice.
    fake_anthropic.push(api.text("Partial answer that breaks", stream_error="overloaded_error"))
    outcome = ask(app, "Hi")
    assert not outcome.ok and outcome.reply == messages.MODEL_FAILED
    assert len(fake_anthropic.requests) == 1


def test_a_slow_response_times_out_and_is_retried(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    settings = model_settings.model_copy(update={"model_timeout_s": 0.5})
    app = build(settings, embedder=hashing_embedder)
    try:
        fake_anthropic.push(api.text("too late", delay_s=3), api.text("on time"))
        # The timeout carries no retry-after: keep the backoff short for the test.
        outcome = asyncio.run(_ask_with_fast_backoff(app, settings, "Hi"))
        assert outcome.ok and outcome.reply == "on time"
        assert len(fake_anthropic.requests) == 2
    finally:
        app.close()


async def _ask_with_fast_backoff(app: Thoth, settings: Settings, text: str) -> TurnOutcome:
    assert settings.anthropic_api_key is not None
    client = anthropic.AsyncAnthropic(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
        timeout=settings.model_timeout_s,
        max_retries=0,
    )
    model = RetryingModel(AnthropicModel(client, settings.thoth_model), base_delay_s=0.01)
    app.pipeline._model = model  # the composition root's choice, swapped for a fast backoff
    try:
        return await _ask(app, text, key="slow", user="U1")
    finally:
        await client.close()


def test_tool_use_is_answered_and_the_turn_continues(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(
        api.text("Noted."),
        api.tool_use("recall", {"query": "postmortem due"}, preface="Let me check."),
        api.text("It is due on the 14th."),
    )
    _, outcome = converse(
        app,
        [
            ("earlier", "The incident postmortem is due on the 14th."),
            ("later", "Remind me about the postmortem?"),
        ],
    )

    # Opus 5.5 writes words before a tool call inside thinking, which is never shown.
    assert outcome.reply == "It is due on the 14th."
    follow_up = fake_anthropic.requests[-1]
    assistant, results = follow_up.body["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["thinking", "thinking", "tool_use"]
    (result,) = results["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == assistant["content"][-1]["id"]
    assert "postmortem is due on the 14th" in result["content"]


def test_cost_comes_from_usage_and_the_daily_cap_stops_new_calls(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    usage = api.Usage(
        input_tokens=1000,
        output_tokens=500,
        cache_read_input_tokens=2000,
        cache_creation_input_tokens=4000,
    )
    settings = model_settings.model_copy(update={"daily_cost_cap_usd": 0.02})
    app = build(settings, embedder=hashing_embedder)
    try:
        fake_anthropic.push(api.text("Costly.", usage=usage))
        outcome, capped = converse(app, [("s1", "Spend some money"), ("s1", "And again")])
        expected = DEFAULT_PRICES["claude-opus-5-5"].cost(Usage(1000, 500, 2000, 4000))
        assert expected == pytest.approx(0.004 + 0.01 + 0.0004 + 0.02)  # Opus 5.5 list prices
        assert outcome.cost_usd == pytest.approx(expected)
        stored = app.episodic.store.get(outcome.episode_id or "")
        assert stored is not None and stored.cost_usd == pytest.approx(expected)

        assert not capped.ok
        assert "spending limit" in capped.reply and "$0.02" in capped.reply
        assert len(fake_anthropic.requests) == 1
    finally:
        app.close()


def test_a_failing_or_slow_context_source_is_left_out(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    class Source:
        def __init__(self, answer: Callable[[], Awaitable[str | None]]) -> None:
            self._answer = answer

        async def for_message(self, person: object, message: str, viewer: object) -> str | None:
            return await self._answer()

    async def broken() -> str | None:
        raise RuntimeError("identity backend down")

    async def slow() -> str | None:
        await asyncio.sleep(5)
        return "never"

    async def knows() -> str | None:
        return "Dana prefers short answers."

    def use(answer: Callable[[], Awaitable[str | None]]) -> None:
        # The composition root's registry, with the user-model source swapped in place.
        sources = app.pipeline._context._sources
        sources[:] = [
            UserModel(Source(answer), deadline_s=1.5)  # type: ignore[arg-type]
            if source.name == "user-model" else source for source in sources]

    for answer in (broken, slow):
        use(answer)
        assert ask(app, "Hi").ok
        texts = fake_anthropic.requests[-1].context_texts()
        assert not any(t.startswith("<user-model>") for t in texts)

    use(knows)
    ask(app, "Hi", key="fresh")
    texts = fake_anthropic.requests[-1].context_texts()
    user_model = next(i for i, t in enumerate(texts) if t.startswith("<user-model>"))
    slack = next(i for i, t in enumerate(texts) if t.startswith("<slack-context>"))
    assert user_model == slack + 1
    assert "short answers" in texts[user_model]


def test_sessions_run_concurrently_and_turns_of_one_session_in_order(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(*[api.text("slow reply", delay_s=0.4)] * 4)

    async def run(turns: list[tuple[str, str]]) -> list[TurnOutcome]:
        return list(
            await asyncio.gather(
                *(app.pipeline.handle(Turn(k, t, PLACE, user="U1"), RecordingSink())
                  for k, t in turns)
            )
        )

    asyncio.run(run([("a", "first in a"), ("b", "first in b")]))
    assert fake_anthropic.max_in_flight == 2

    fake_anthropic.max_in_flight = 0
    asyncio.run(run([("c", "one"), ("c", "two")]))
    assert fake_anthropic.max_in_flight == 1
    # The second turn of the session saw the first one's transcript.
    assert len(fake_anthropic.requests[-1].body["messages"]) == 3


def test_secrets_never_reach_the_transcript_or_the_episode(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    token = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
    outcome = ask(app, f"our bot token is {token}")
    (turn,) = app.transcript.turns(outcome.session_id)
    assert token not in turn.user_text and "[REDACTED" in turn.user_text
    stored = app.episodic.store.get(outcome.episode_id or "")
    assert stored is not None and token not in stored.user_text


def test_a_failing_episode_write_never_reaches_the_user(
    model_settings: Settings, fake_anthropic: FakeAnthropic
) -> None:
    class BrokenEmbedder(HashingEmbedder):
        def embed(self, texts: Any) -> Any:
            if any("remember" in t for t in texts):
                raise OSError("disk full")
            return super().embed(texts)

    app = build(model_settings, embedder=BrokenEmbedder())
    app.pipeline._after._delays = (0.0, 0.0)
    try:
        fake_anthropic.push(api.text("Noted."))
        sink = RecordingSink()
        outcome = asyncio.run(_handle_and_drain(app, "please remember this", sink))
        assert outcome.ok and sink.final == "Noted." and sink.ok is True
        assert app.episodic.store.count() == 0
        assert app.transcript.count(outcome.session_id) == 1
    finally:
        app.close()


async def _handle_and_drain(app: Thoth, text: str, sink: RecordingSink) -> TurnOutcome:
    outcome = await app.pipeline.handle(Turn("s", text, PLACE, user="U1"), sink)
    assert await app.pipeline.drain(10) == 0
    return outcome



def test_the_loopback_server_answers_plain_json_too(fake_anthropic: FakeAnthropic) -> None:
    # Reflection asks for one whole JSON answer; the fake must speak that form as well.
    fake_anthropic.push(api.tool_use("report", {"outcome": "success"}, preface="Here."))

    async def create() -> Any:
        client = anthropic.AsyncAnthropic(
            api_key="sk-ant-test-key", base_url=fake_anthropic.url, max_retries=0
        )
        try:
            return await client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=100,
                messages=[{"role": "user", "content": "judge"}],
            )
        finally:
            await client.close()

    message = asyncio.run(create())
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"outcome": "success"}
    assert message.usage.input_tokens > 0 and message.stop_reason == "tool_use"
    assert "stream" not in fake_anthropic.requests[0].body


def test_tool_calls_without_words_are_a_failed_turn_that_breaks_nothing(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(*[api.tool_use("recall", {"query": "x"})] * 5)
    empty, after = converse(app, [("s1", "loop forever"), ("s1", "hello?")])
    assert not empty.ok
    assert empty.reply == messages.TOOL_ROUNDS_USED.format(rounds=MAX_TOOL_ROUNDS)
    assert after.ok
    assert fake_anthropic.requests[-1].conversation() == [{"role": "user", "content": "hello?"}]


def test_failing_persona_and_transcript_sources_are_left_out(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    class Broken:
        def load(self) -> None:
            raise OSError("disk gone")

        def turns(self, session_id: str) -> None:
            raise OSError("disk gone")

        def count(self, session_id: str) -> int:
            return 1  # not a first turn: no related episodes either

    from layers.shared.offloaded import Offloaded

    app.pipeline._persona = Offloaded(Broken())  # type: ignore[arg-type]
    app.pipeline._transcript = Offloaded(Broken())  # type: ignore[arg-type]
    outcome = ask(app, "still there?")
    assert outcome.ok
    texts = fake_anthropic.requests[-1].system_texts()
    assert texts[0].startswith("<skill-index>")  # the persona block is left out
    assert not any("You are Thoth" in text for text in texts)
    (message,) = fake_anthropic.requests[-1].body["messages"]
    assert message["content"][-1] == {"type": "text", "text": "still there?"}


def test_an_interrupted_turn_keeps_its_cost_and_its_message(
    model_settings: Settings, hashing_embedder: HashingEmbedder
) -> None:
    from bridge.model.pricing import Usage as ModelUsage
    from bridge.model.protocol import ModelResult, ToolCall
    from tests.fakes import ScriptedModel

    class Hangs(ScriptedModel):
        async def respond(self, request: object, on_text: object) -> object:
            if not self.script:
                await asyncio.Event().wait()
            return await super().respond(request, on_text)

    call = ToolCall("t1", "recall", {"query": "x"})
    first_round = ModelResult(
        text="",
        tool_calls=(call,),
        usage=ModelUsage(input_tokens=1_000_000),
        model="claude-sonnet-4-6",
    )
    hanging = Hangs(first_round)
    app = build(model_settings, embedder=hashing_embedder, model=hanging)  # type: ignore[arg-type]
    try:

        async def run() -> str:
            task = asyncio.create_task(
                app.pipeline.handle(Turn("s1", "a long job", PLACE, user="U1"), RecordingSink())
            )
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return app.sessions.open("s1", PLACE).id

        session_id = asyncio.run(run())
        from bridge.model.cost_ledger import CostLedger

        # The first round's $3, and the round cut off mid-call charged its prompt, as
        # estimated (its request was out: stopping a reply never gets around the caps).
        spent = CostLedger(app.db).spent_today()
        assert 3.0 < spent < 3.1
        with app.db.read() as conn:
            (held,) = conn.execute("SELECT COUNT(*) FROM model_reservations").fetchone()
        assert held == 0
        (kept,) = app.transcript.turns(session_id)
        assert kept.user_text == "a long job" and not kept.ok
    finally:
        app.close()


def test_offline_a_question_that_got_no_answer_is_not_an_episode(
    settings: Settings, hashing_embedder: HashingEmbedder
) -> None:
    offline = build(settings, embedder=hashing_embedder)
    try:
        ask(offline, "Our staging database lives on pelican-db-7. Backups run at 02:00.")
        ask(offline, "What do you know about the backups?")
        assert offline.episodic.store.count() == 1  # the statement, not the question
        answer = ask(offline, "When do the backups run?")
        assert offline.episodic.store.count() == 1
        with offline.db.read() as conn:
            turns = conn.execute("SELECT count(*) FROM transcript_turns").fetchone()[0]
        assert turns == 3  # the transcript keeps every turn
    finally:
        offline.close()
    assert answer.ok
