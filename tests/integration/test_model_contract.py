"""The turn against what the Messages API reference says: the loopback refuses what the
API refuses, and produces what it produces (empty text blocks, every stop reason, long
retry-after values); Thoth must handle each."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anthropic
import pytest

from bridge import messages
from bridge.app import Thoth, build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

PLACE = Place("T1", "C1", "public", "1.1", "general")


@pytest.fixture
def app(model_settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(model_settings, embedder=hashing_embedder)
    yield thoth
    thoth.close()


def _turn(app: Thoth, text: str) -> tuple[TurnOutcome, RecordingSink]:
    sink = RecordingSink()

    async def run() -> TurnOutcome:
        outcome = await app.pipeline.handle(Turn("s1", text, PLACE, user="U1"), sink)
        await app.drain()
        return outcome

    return asyncio.run(run()), sink


def test_an_empty_text_block_beside_a_tool_call_is_not_sent_back(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use("recall", {"query": "deploys"}, empty_text=True),
                        api.text("Deploys are on Fridays."))
    outcome, _ = _turn(app, "when do we deploy?")
    assert outcome.ok and outcome.reply == "Deploys are on Fridays."
    sent_back = fake_anthropic.requests[1].body["messages"][-2]
    assert sent_back["role"] == "assistant"
    # The thinking block goes back whole (the loopback checks its signature); the empty
    # text block does not (the API refuses one).
    assert [block["type"] for block in sent_back["content"]] == ["thinking", "tool_use"]


@pytest.mark.parametrize(
    ("stop_reason", "notice"),
    [("max_tokens", messages.REPLY_CUT),
     ("model_context_window_exceeded", messages.CONTEXT_FULL),
     ("refusal", messages.MODEL_REFUSED)],
)
def test_a_reply_that_stops_short_is_said_so_and_never_stored_as_an_answer(
    app: Thoth, fake_anthropic: FakeAnthropic, stop_reason: str, notice: str
) -> None:
    fake_anthropic.push(api.text("The first half of an", stop_reason=stop_reason))
    outcome, sink = _turn(app, "explain the whole release process")
    assert not outcome.ok and sink.final == notice
    (turn,) = app.transcript.turns(outcome.session_id)
    assert not turn.ok and turn.reply_text == f"The first half of an\n\n{notice}"
    assert app.episodic.store.count() == 0


def test_a_tool_call_cut_by_the_length_limit_is_never_run(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use("forget_about_me", {}, stop_reason="max_tokens"))
    outcome, sink = _turn(app, "please forget what you know about me")
    assert not outcome.ok and sink.final == messages.REPLY_CUT
    assert len(fake_anthropic.requests) == 1  # no tool result went back: nothing ran


def test_a_long_retry_after_is_honoured_never_cut_and_past_the_turn_the_person_is_told(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.error(429, retry_after="1"), api.text("After the wait."),
                        api.error(429, retry_after="90"))
    waited, busy = RecordingSink(), RecordingSink()

    async def run() -> tuple[TurnOutcome, TurnOutcome]:
        pipeline = app.pipeline
        first = await pipeline.handle(Turn("s1", "are you there?", PLACE, user="U1"), waited)
        second = await pipeline.handle(Turn("s1", "and now?", PLACE, user="U1"), busy)
        await app.drain()
        return first, second

    first, second = asyncio.run(run())
    assert first.reply == "After the wait."
    one, two, three = fake_anthropic.requests
    assert two.received_at - one.received_at >= 0.9  # the server's word, not a guess
    assert not second.ok
    assert busy.final == messages.MODEL_ASKS_TO_WAIT.format(seconds=90)
    # Past the turn's limit (MODEL_TIMEOUT_S) it is said, not retried against the server's word.
    assert len(fake_anthropic.requests) == 3


def test_the_loopback_refuses_what_the_api_refuses(fake_anthropic: FakeAnthropic) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake_anthropic.url,
                                 max_retries=0)
    user = {"role": "user", "content": "hi"}
    tool = {"name": "look_up", "description": "d", "input_schema": {"type": "object"}}
    cases = [
        {"messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]},
        {"messages": [user, user]},
        {"messages": [user, {"role": "assistant", "content": "prefill"}]},
        {"messages": [user, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "look_up", "input": {}}]},
            {"role": "user", "content": "no result"}], "tools": [tool]},
        {"messages": [user], "tools": [{**tool, "name": "look up!"}]},
        {"messages": [user], "tools": [tool], "tool_choice": {"type": "tool", "name": "other"}},
        {"messages": [user], "tools": [tool], "tool_choice": {"type": "tool"}},
        {"messages": [user], "tools": [tool], "tool_choice": {"type": "required"}},
        {"messages": [user], "tool_choice": {"type": "tool", "name": "look_up"}},
        {"messages": [user], "system": [
            {"type": "text", "text": f"s{n}", "cache_control": {"type": "ephemeral"}}
            for n in range(5)]},
    ]
    for case in cases:
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(model="claude-sonnet-4-6", max_tokens=100, **case)
    with pytest.raises(anthropic.BadRequestError, match="maximum allowed"):
        client.messages.create(model="claude-sonnet-4-6", max_tokens=200_000, messages=[user],
                               timeout=10)
    assert client.messages.create(model="claude-sonnet-4-6", max_tokens=100,
                                  messages=[user]).content


def test_a_stream_error_before_any_text_is_retried_and_shown_nowhere(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.text("lost", stream_error="overloaded_error", error_before_text=True),
                        api.text("Here after all."))
    outcome, sink = _turn(app, "hello?")
    assert outcome.ok and outcome.reply == "Here after all."
    assert "".join(sink.pieces) == "Here after all."
    assert len(fake_anthropic.requests) == 2


def test_the_conversation_so_far_is_cached_and_read_back_on_the_next_turn(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    long_answer = "The release checklist has many steps. " * 120  # a real-sized reply
    fake_anthropic.push(api.text(long_answer), api.text("Step two is the smoke test."),
                        api.text("Step three is the sign-off."))
    questions = ("what is on the release checklist?", "and step two?", "and step three?")

    async def run() -> None:
        for text in questions:
            await app.pipeline.handle(Turn("s1", text, PLACE, user="U1"), RecordingSink())
        await app.drain()

    asyncio.run(run())
    last = fake_anthropic.requests[-1].body
    assert len([b for b in last["system"] if b.get("cache_control")]) == 1  # not two
    replayed = last["messages"][-2]
    assert replayed["role"] == "assistant" and replayed["content"][0]["cache_control"]
    with app.db.read() as conn:
        reads = [int(row[0]) for row in conn.execute(
            "SELECT cache_read_tokens FROM model_usage WHERE purpose = 'turn' ORDER BY rowid")]
    # Each turn reads more from the cache than the one before: the conversation so far.
    assert reads[0] == 0 and reads[1] < reads[2]


def test_the_loopback_refuses_unknown_models_a_missing_version_and_oversize_bodies(
    fake_anthropic: FakeAnthropic,
) -> None:
    import http.client
    import json
    import urllib.parse

    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake_anthropic.url,
                                 max_retries=0)
    user = {"role": "user", "content": "hi"}
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="claude-sonnet-4", max_tokens=10, messages=[user])
    url = urllib.parse.urlsplit(fake_anthropic.url)

    def post(headers: dict[str, str], body: bytes) -> int:
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        connection.putrequest("POST", "/v1/messages")
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        if body:
            connection.send(body)
        status = connection.getresponse().status
        connection.close()
        return status

    body = json.dumps({"model": "claude-opus-5-5", "max_tokens": 10,
                       "messages": [user]}).encode()
    base = {"x-api-key": "sk-ant-test", "content-type": "application/json"}
    assert post({**base, "content-length": str(len(body))}, body) == 400  # no version
    oversize = {**base, "anthropic-version": "2026-10-21", "content-length": "40000000"}
    assert post(oversize, b"") == 413  # refused before the body is read


def _client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.url, max_retries=0)


USER = {"role": "user", "content": "hi"}
TOOL = {"name": "look_up", "description": "d", "input_schema": {"type": "object"}}


@pytest.mark.parametrize(
    ("model", "options", "reason"),
    [
        ("claude-opus-5-5", {"tools": [TOOL], "tool_choice": {"type": "tool", "name": "look_up"}},
         'type "tool" and "any" are not supported'),
        ("claude-sonnet-5-5", {"tools": [TOOL], "tool_choice": {"type": "any"}},
         'type "tool" and "any" are not supported'),
        ("claude-haiku-5-5", {"tools": [TOOL], "tool_choice": {"type": "tool", "name": "look_up"}},
         "not supported|tool_choice forces tool use"),
        ("claude-opus-4-8", {"tools": [TOOL], "tool_choice": {"type": "any"},
                             "thinking": {"type": "adaptive"}}, "tool_choice forces tool use"),
        ("claude-opus-5-5", {"thinking": {"type": "adaptive", "display": "hidden"}},
         "thinking.display"),
        ("claude-opus-5-5", {"thinking": {"type": "disabled"}}, "thinking.type.disabled"),
        ("claude-opus-5-5", {"thinking": {"type": "enabled", "budget_tokens": 2048}},
         "thinking.type.enabled"),
        ("claude-haiku-4-5", {"thinking": {"type": "adaptive"}}, "adaptive thinking is not"),
        ("claude-haiku-4-5", {"output_config": {"effort": "low"}}, "effort is not supported"),
        ("claude-opus-4-6", {"output_config": {"effort": "xhigh"}}, "'xhigh' is not supported"),
        ("claude-sonnet-4-6", {"thinking": {"type": "enabled", "budget_tokens": 500}}, ">= 1024"),
        ("claude-sonnet-4-6", {"tools": [TOOL], "tool_choice": {"type": "any"},
                               "thinking": {"type": "enabled", "budget_tokens": 2048}},
         "tool_choice forces tool use"),
    ],
)
def test_the_loopback_refuses_what_each_model_refuses(
    fake_anthropic: FakeAnthropic, model: str, options: dict[str, object], reason: str
) -> None:
    with pytest.raises(anthropic.BadRequestError, match=reason):
        _client(fake_anthropic).messages.create(model=model, max_tokens=4000, messages=[USER],
                                                **options)  # type: ignore[arg-type]


def test_the_loopback_takes_what_each_model_takes_and_thinks_where_it_always_does(
    fake_anthropic: FakeAnthropic,
) -> None:
    client = _client(fake_anthropic)
    forced = client.messages.create(model="claude-opus-4-8", max_tokens=4000, messages=[USER],
                                    tools=[TOOL], tool_choice={"type": "tool", "name": "look_up"})
    plain = client.messages.create(model="claude-opus-5-5", max_tokens=4000, messages=[USER],
                                   thinking={"type": "adaptive"},
                                   output_config={"effort": "max"})
    old = client.messages.create(model="claude-sonnet-4-6", max_tokens=4000, messages=[USER])
    assert [block.type for block in forced.content] == ["text"]  # no thinking unless asked
    thinking, words = plain.content
    assert thinking.type == "thinking" and thinking.thinking == "" and thinking.signature
    assert words.type == "text" and plain.usage.output_tokens > 300  # thinking is counted
    assert [block.type for block in old.content] == ["text"]  # thinking is off by default
    with pytest.raises(anthropic.NotFoundError):  # retired
        client.messages.create(model="claude-opus-4-1", max_tokens=10, messages=[USER])


def test_a_tool_round_must_send_its_thinking_back_whole(fake_anthropic: FakeAnthropic) -> None:
    client = _client(fake_anthropic)
    fake_anthropic.push(api.tool_use("look_up", {}, preface="Checking.", redacted_thinking=True))
    first = client.messages.create(model="claude-opus-5-5", max_tokens=4000, messages=[USER],
                                   tools=[TOOL])
    issued = [block.to_dict(exclude_none=True) for block in first.content]
    assert [b["type"] for b in issued] == ["thinking", "redacted_thinking", "thinking",
                                           "tool_use"]
    call = issued[-1]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                           "content": "found"}]}

    def round_two(content: list[dict[str, object]]) -> object:
        return client.messages.create(
            model="claude-opus-5-5", max_tokens=4000, tools=[TOOL],
            messages=[USER, {"role": "assistant", "content": content}, result],
        )  # type: ignore[call-overload]

    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        round_two([call])
    with pytest.raises(anthropic.BadRequestError, match="cannot be modified"):
        round_two([issued[0], call])  # the redacted block and a progress note dropped
    forged = {**issued[0], "thinking": "I was told to say yes."}
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        round_two([forged, *issued[1:]])
    assert round_two(issued)


def _with(model_settings: Settings, hashing_embedder: HashingEmbedder,
          **update: object) -> Thoth:
    return build(model_settings.model_copy(update=update), embedder=hashing_embedder)


def test_max_tokens_holds_thinking_and_the_reply(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    long_reply = "The release goes in two waves, flags dark, with a rehearsal first. " * 40
    fake_anthropic.push(api.text(long_reply, thinking_tokens=1_500),
                        api.text(long_reply, thinking_tokens=1_500))
    sized_for_text = _with(model_settings, hashing_embedder, model_max_tokens=2_048)
    outcome, sink = _turn(sized_for_text, "how does the release go?")
    sized_for_text.close()
    assert not outcome.ok and sink.final == messages.REPLY_CUT
    sized = _with(model_settings, hashing_embedder)  # sized per model and effort
    outcome, _ = _turn(sized, "how does the release go?")
    sized.close()
    assert outcome.ok and outcome.reply == long_reply.strip()
    assert fake_anthropic.requests[-1].body["max_tokens"] == 16_000


@pytest.mark.parametrize(
    ("reply", "told"),
    [(api.error(400, error_message="messages.0: something Thoth sent is wrong"),
      messages.MODEL_MISCONFIGURED),
     (api.error(401, error_message="invalid x-api-key"), messages.MODEL_MISCONFIGURED),
     (api.spend_limit(), messages.MODEL_SPEND_LIMIT),
     (api.error(400, error_message="prompt is too long: 1000213 tokens > 1000000 maximum"),
      messages.CONTEXT_FULL)],
    ids=["400", "401", "spend-limit-429", "prompt-too-long"],
)
def test_a_refusal_that_will_not_go_away_is_not_retried_and_is_told_as_it_is(
    app: Thoth, fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture,
    reply: api.Reply, told: str,
) -> None:
    fake_anthropic.push(reply)
    outcome, sink = _turn(app, "are you there?")
    assert not outcome.ok and sink.final == told
    assert len(fake_anthropic.requests) == 1  # asked once: another try gets the same answer
    assert reply.error_message in caplog.text  # the API's own words, for the operator


def test_the_tool_round_limit_says_so(app: Thoth, fake_anthropic: FakeAnthropic) -> None:
    from bridge.pipeline.answering import MAX_TOOL_ROUNDS

    fake_anthropic.push(*[api.tool_use("recall", {"query": f"try {n}"})
                          for n in range(MAX_TOOL_ROUNDS + 1)])
    outcome, sink = _turn(app, "find the thing")
    assert not outcome.ok
    assert sink.final == messages.TOOL_ROUNDS_USED.format(rounds=MAX_TOOL_ROUNDS)
    assert len(fake_anthropic.requests) == MAX_TOOL_ROUNDS + 1


def test_past_the_transcript_budget_the_conversation_is_still_read_from_the_cache(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    answer = "The release checklist has a step for that, and an owner for the step. " * 6
    app = _with(model_settings, hashing_embedder, transcript_token_budget=1_500)
    fake_anthropic.push(*[api.text(answer) for _ in range(30)])

    async def run() -> None:
        for number in range(30):
            text = f"question {number}: who owns this step of the release?"
            await app.pipeline.handle(Turn("s1", text, PLACE, user="U1"), RecordingSink())
        await app.drain()

    asyncio.run(run())
    with app.db.read() as conn:
        reads = [int(row[0]) for row in conn.execute(
            "SELECT cache_read_tokens FROM model_usage ORDER BY rowid")]
    app.close()
    starts = [r.conversation()[0]["content"] for r in fake_anthropic.requests]
    moves = sum(1 for before, after in zip(starts, starts[1:], strict=False) if after != before)
    assert starts[-1] != starts[0]  # old turns did go
    assert moves <= 5  # in blocks: one turn at a time would move it about 20 times
    # Between moves each turn reads the conversation so far, not only the system prompt.
    system_only = min(r for r in reads[1:] if r)
    assert sum(1 for r in reads[10:] if r > system_only) >= 15


def test_a_long_prompt_on_haiku_5_5_is_charged_in_its_second_band_and_counts_to_the_cap(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    from bridge.model.catalogue import DEFAULT_PRICES
    from bridge.model.pricing import Usage

    app = _with(model_settings, hashing_embedder, thoth_model="claude-haiku-5-5",
                daily_cost_cap_usd=0.04)
    long_prompt = api.Usage(input_tokens=90_000, output_tokens=1_000,
                            cache_read_input_tokens=20_000)
    fake_anthropic.push(api.text("Read it all.", usage=long_prompt), api.text("never sent"))
    capped = RecordingSink()

    async def run() -> tuple[TurnOutcome, TurnOutcome]:
        first = await app.pipeline.handle(
            Turn("s1", "summarise the attached log", PLACE, user="U1"), RecordingSink())
        second = await app.pipeline.handle(Turn("s1", "and the next?", PLACE, user="U1"), capped)
        await app.drain()
        return first, second

    first, second = asyncio.run(run())
    app.close()
    base = DEFAULT_PRICES["claude-haiku-5-5"].model_copy(update={"bands": []})
    charged = 5 * base.cost(Usage(90_000, 1_000, 20_000, 0))
    assert first.cost_usd == pytest.approx(charged)  # $0.0485, not $0.0097: over the cap
    assert not second.ok and capped.final == messages.COST_CAP_REACHED.format(cap=0.04)
    assert len(fake_anthropic.requests) == 1
