"""Prompt assembly details and the offline responder's two steps."""

from __future__ import annotations

import asyncio

from bridge import messages
from bridge.model.offline import OfflineResponder
from bridge.model.protocol import ModelRequest
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.tools.recall_memory import RECALL_MEMORY
from bridge.pipeline.turn import Turn
from layers.places import Place
from layers.working.budget import TrimmedTranscript
from layers.working.transcript import TranscriptTurn

PLACE = Place("T1", "C1", "private", "1712.5", "eng")


def test_several_speakers_are_named_and_the_turns_context_rides_with_its_message() -> None:
    transcript = TrimmedTranscript(
        [TranscriptTurn("Deploy now?", "Not yet.", user="U2", user_name="Ari")], dropped=2
    )
    request = build_request(
        Turn("k", "Why not?", PLACE, user="U1", user_name="Dana"),
        GatheredContext(persona="P", transcript=transcript),
        model="m",
    )
    first, reply, current = request.messages
    assert first == {"role": "user", "content": "Ari: Deploy now?"}
    # The last replayed reply carries the conversation's cache breakpoint.
    assert reply == {"role": "assistant", "content": [
        {"type": "text", "text": "Not yet.", "cache_control": {"type": "ephemeral"}}]}
    assert current == {"role": "user", "content": "Dana: Why not?"}
    # Only what stays put is in the system prompt; what may change each turn heads the
    # turn's own message, after the cached conversation.
    assert [s.name for s in request.system] == ["persona", "skill-index"]
    assert [s.name for s in request.context] == ["slack-context", "dropped-turns"]
    assert request.turn_index == 2
    assert "#eng (private channel)" in request.context[0].text
    assert "thread: 1712.5" in request.context[0].text
    assert request.context[1].text.startswith("[2 earlier turns")


def test_offline_responder_asks_memory_then_answers_from_it() -> None:
    responder = OfflineResponder()
    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    request = ModelRequest(
        "offline", (), ({"role": "user", "content": "deploy day?"},), (RECALL_MEMORY,)
    )
    ask = asyncio.run(responder.respond(request, on_text))
    (call,) = ask.tool_calls
    assert call.name == "recall_memory" and call.input == {"query": "deploy day?"}
    assert shown == []

    answered = ModelRequest(
        "offline",
        (),
        (
            *request.messages,
            {"role": "assistant", "content": list(ask.content)},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call.id,
                     "content": "- 2026-11-01, #ops, Dana: we deploy on Fridays"}
                ],
            },
        ),
        (RECALL_MEMORY,),
    )
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
    first = ModelRequest("offline", (), ({"role": "user", "content": said},), (RECALL_MEMORY,))
    noted = asyncio.run(responder.respond(first, on_text))
    assert not noted.tool_calls  # nothing is looked up for a statement
    assert noted.text.startswith(messages.NO_MODEL_CONFIGURED) and f"> {said}" in noted.text
    later = ModelRequest("offline", (), (
        *first.messages, {"role": "assistant", "content": noted.text},
        {"role": "user", "content": "Steps: 1. Page the on-call. 2. Roll back."},
    ), (RECALL_MEMORY,))
    again = asyncio.run(responder.respond(later, on_text))
    assert messages.NO_MODEL_CONFIGURED not in again.text
    assert "> Steps: 1. Page the on-call. 2. Roll back." in again.text
    asked = ModelRequest("offline", (), (*later.messages,
                                         {"role": "assistant", "content": again.text},
                                         {"role": "user", "content": "When do we deploy?"}),
                         (RECALL_MEMORY,))
    assert asyncio.run(responder.respond(asked, on_text)).tool_calls  # a question looks


def test_a_message_asks_only_when_every_sentence_asks() -> None:
    from bridge.model.asking import asks

    assert asks("When do we deploy?") and asks("what do we deploy on fridays")
    assert asks("Where is staging? Who moved it?")
    assert not asks("We moved staging to pelican-db-7. Did you know?")  # a fact to keep
    assert not asks("We deploy on Fridays") and not asks("   ")
