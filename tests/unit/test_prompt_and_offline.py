"""Prompt assembly details and the offline responder's two steps."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bridge import messages
from bridge.model.anthropic_model import wire_messages
from bridge.model.offline import OfflineResponder
from bridge.model.protocol import ModelRequest, Said, ToolOutcome, ToolSpec
from bridge.pipeline.context import ContextAsk, ContextBlock, ContextSource, ContextSources
from bridge.pipeline.context.dropped_turns import DroppedTurns
from bridge.pipeline.context.slack_context import SlackContext
from bridge.pipeline.deadlines import MissedDeadlines
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.tools.recall import RECALL
from bridge.pipeline.turn import Turn
from layers.shared.places import Place
from layers.working.budget import TrimmedTranscript
from layers.working.transcript import TranscriptTurn
from tests.fakes import RecordingSink

PLACE = Place("T1", "C1", "private", "1712.5", "eng")
# The offline responder asks for the recall tool by its name, as the pipeline offers it.
RECALL_SPEC = ToolSpec(RECALL, "search memory", {"type": "object"})


def test_several_speakers_are_named_and_the_turns_context_rides_with_its_message() -> None:
    transcript = TrimmedTranscript(
        [TranscriptTurn("Deploy now?", "Not yet.", user="U2", user_name="Ari")], dropped=2
    )
    turn = Turn("k", "Why not?", PLACE, user="U1", user_name="Dana")
    blocks = asyncio.run(_gathered(turn, transcript, SlackContext(), DroppedTurns()))
    request = build_request(
        turn, GatheredContext(persona="P", transcript=transcript, blocks=blocks), model="m")
    first, reply, current = request.messages
    assert first == Said("user", "Ari: Deploy now?")
    # The last replayed reply carries the conversation's cache breakpoint.
    assert reply == Said("assistant", "Not yet.", cache=True)
    assert current == Said("user", "Dana: Why not?")
    # Only what stays put is in the system prompt; what may change each turn heads the
    # turn's own message, after the cached conversation.
    assert [s.name for s in request.system] == ["persona", "skill-index"]
    assert [s.name for s in request.context] == ["slack-context", "dropped-turns"]
    assert request.turn_index == 2
    assert "#eng (private channel)" in request.context[0].text
    assert "thread: 1712.5" in request.context[0].text
    assert request.context[1].text.startswith("[2 earlier turns")
    # The Anthropic adapter alone knows the wire: the breakpoint as cache_control, the
    # turn's context as text blocks ahead of the person's words.
    wire = wire_messages(request)
    assert wire[0] == {"role": "user", "content": "Ari: Deploy now?"}
    assert wire[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Not yet.", "cache_control": {"type": "ephemeral"}}]}
    assert [block["text"] for block in wire[2]["content"]] == [
        request.context[0].text, request.context[1].text, "Dana: Why not?"]


async def _gathered(
    turn: Turn, transcript: TrimmedTranscript, *sources: ContextSource
) -> Sequence[ContextBlock]:
    read: asyncio.Future[TrimmedTranscript | None] = asyncio.get_running_loop().create_future()
    read.set_result(transcript)
    return await ContextSources(sources).gather(
        ContextAsk(turn, "s1", False, read), RecordingSink(), MissedDeadlines())


def test_a_tool_round_goes_on_the_wire_as_the_model_sent_it_then_the_results() -> None:
    from bridge.model.protocol import ModelResult, ToolCall

    call = ToolCall("toolu_1", "recall", {"query": "q"})
    thinking = {"type": "thinking", "thinking": "", "signature": "sig"}
    asked = ModelRequest("m", (), (Said("user", "q?"),))
    result = ModelResult(text="", echo=(thinking, {"type": "tool_use", "id": call.id,
                                                    "name": call.name, "input": call.input}),
                         tool_calls=(call,))
    later = asked.after_tools(result, [ToolOutcome(call.id, "nothing", is_error=True)])
    _, assistant, results = wire_messages(later)
    assert assistant == {"role": "assistant", "content": list(result.echo)}
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "nothing",
         "is_error": True}]}
    # A model that echoes nothing (the offline responder) gets its calls as tool_use.
    plain = asked.after_tools(ModelResult(text="", tool_calls=(call,)),
                              [ToolOutcome(call.id, "x")])
    assert wire_messages(plain)[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "recall", "input": {"query": "q"}}]


def test_offline_responder_asks_memory_then_answers_from_it() -> None:
    responder = OfflineResponder()
    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    request = ModelRequest("offline", (), (Said("user", "deploy day?"),), (RECALL_SPEC,))
    ask = asyncio.run(responder.respond(request, on_text))
    (call,) = ask.tool_calls
    assert call.name == RECALL and call.input == {"query": "deploy day?"}
    assert shown == []

    answered = request.after_tools(
        ask, [ToolOutcome(call.id, "- 2026-11-01, #ops, Dana: we deploy on Fridays")])
    result = asyncio.run(responder.respond(answered, on_text))
    assert not result.tool_calls
    assert result.text.startswith(messages.NO_MODEL_CONFIGURED)
    assert "we deploy on Fridays" in result.text
    assert shown == [result.text]


def test_offline_a_statement_is_acknowledged_and_the_banner_is_said_once() -> None:
    responder = OfflineResponder()

    async def on_text(text: str) -> None:
        return None

    said = "We moved the api deploys to Fridays after the demo"
    first = ModelRequest("offline", (), (Said("user", said),), (RECALL_SPEC,))
    noted = asyncio.run(responder.respond(first, on_text))
    assert not noted.tool_calls  # nothing is looked up for a statement
    assert noted.text.startswith(messages.NO_MODEL_CONFIGURED) and f"> {said}" in noted.text
    later = ModelRequest("offline", (), (
        *first.messages, Said("assistant", noted.text),
        Said("user", "Steps: 1. Page the on-call. 2. Roll back."),
    ), (RECALL_SPEC,))
    again = asyncio.run(responder.respond(later, on_text))
    assert messages.NO_MODEL_CONFIGURED not in again.text
    assert "> Steps: 1. Page the on-call. 2. Roll back." in again.text
    asked = ModelRequest("offline", (), (*later.messages,
                                         Said("assistant", again.text),
                                         Said("user", "When do we deploy?")),
                         (RECALL_SPEC,))
    assert asyncio.run(responder.respond(asked, on_text)).tool_calls  # a question looks


def test_a_message_asks_only_when_every_sentence_asks() -> None:
    from bridge.model.question_or_statement import asks

    assert asks("When do we deploy?") and asks("what do we deploy on fridays")
    assert asks("Where is staging? Who moved it?")
    assert not asks("We moved staging to pelican-db-7. Did you know?")  # a fact to keep
    assert not asks("We deploy on Fridays") and not asks("   ")
