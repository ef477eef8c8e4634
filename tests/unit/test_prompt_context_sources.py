"""The context sources are one list: a new one reaches the prompt in its place with no
edit to ``pipeline.py`` or ``prompt.py``, and one that fails or is late is left out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from bridge.all_tables import ALL_SCHEMAS
from bridge.model.protocol import ModelRequest
from bridge.pipeline.context import ContextAsk, ContextBlock, ContextSource, ContextSources
from bridge.pipeline.context.dropped_turns import DroppedTurns
from bridge.pipeline.context.slack_context import SlackContext
from bridge.pipeline.deadlines import MissedDeadlines
from bridge.pipeline.pipeline import PipelineConfig, TurnPipeline
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.turn import Turn
from layers.procedural.persona import PersonaLoader
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from layers.shared.storage.engines import open_sqlite
from layers.working.budget import TrimmedTranscript
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn
from tests.fakes import RecordingSink, ScriptedModel

PLACE = Place("T1", "C1", "public", None, "general")


class Calendar:
    """A source nobody wired by hand: today's meetings, as a new memory source would be."""

    name = "calendar"
    deadline_s = 1.0
    step: str | None = "Reading the calendar"
    first_turn_only = False

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        return ContextBlock(self.name, f"<calendar>\n{ask.turn.user}: standup at 10\n</calendar>")


class Broken(Calendar):
    name = "broken"

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        raise RuntimeError("backend down")


class Late(Calendar):
    name = "late"
    deadline_s = 0.01

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        await asyncio.sleep(5)
        return ContextBlock(self.name, "never")


class FirstTurnOnly(Calendar):
    name = "first-only"
    first_turn_only = True


def test_a_new_source_reaches_the_turn_in_its_place(tmp_path: Path) -> None:
    """Through the real pipeline: the block sits where the list puts it, with the
    slack-context block before it and the message after it, on every turn."""
    request = _first_request(tmp_path, [SlackContext(), Calendar(), DroppedTurns()])
    assert [section.name for section in request.context] == ["slack-context", "calendar"]
    assert request.context[1].text == "<calendar>\nU1: standup at 10\n</calendar>"
    # With the turn's message, out of the cached system prompt.
    assert [section.name for section in request.system] == ["persona", "skill-index"]


def test_a_failing_or_late_source_is_left_out_and_the_others_keep_their_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = RecordingSink()
    sources: list[ContextSource] = [SlackContext(), Broken(), Late(), Calendar(), FirstTurnOnly()]
    with caplog.at_level(logging.WARNING):
        blocks = _gathered(sources, sink, first_turn=False)
    assert [block.name for block in blocks] == ["slack-context", "calendar"]
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "context source broken failed" in said and "context source late missed" in said
    # Its step says it went wrong; the first-turn-only source was not asked at all.
    steps = [text for kind, text in sink.events if kind == "progress"]
    assert "broken Reading the calendar error" in steps
    assert "late Reading the calendar error" in steps
    assert "calendar Reading the calendar complete" in steps
    assert not any(step.startswith("first-only") for step in steps)


def test_the_prompt_shows_the_blocks_it_is_given_in_their_order() -> None:
    turn = Turn("k", "Why not?", PLACE, user="U1", user_name="Dana")
    transcript = TrimmedTranscript([TranscriptTurn("Deploy now?", "Not yet.", user="U1")], 2)
    blocks = _gathered([Calendar(), DroppedTurns(), SlackContext()], RecordingSink(),
                       first_turn=True, transcript=transcript, turn=turn)
    request = build_request(turn, GatheredContext(transcript=transcript, blocks=blocks),
                            model="m")
    assert [s.name for s in request.context] == ["calendar", "dropped-turns", "slack-context"]
    assert request.context[1].text.startswith("[2 earlier turns")


def _gathered(
    sources: Sequence[ContextSource],
    sink: RecordingSink,
    *,
    first_turn: bool,
    transcript: TrimmedTranscript | None = None,
    turn: Turn | None = None,
) -> Sequence[ContextBlock]:
    async def gather() -> Sequence[ContextBlock]:
        read: asyncio.Future[TrimmedTranscript | None] = asyncio.get_running_loop().create_future()
        read.set_result(transcript)
        ask = ContextAsk(turn or Turn("k", "hi", PLACE, user="U1"), "s1", first_turn, read)
        return await ContextSources(sources).gather(ask, sink, MissedDeadlines())

    return asyncio.run(gather())


def _first_request(tmp_path: Path, sources: Sequence[ContextSource]) -> ModelRequest:
    db = open_sqlite(tmp_path / "thoth.db", schemas=ALL_SCHEMAS)
    persona = tmp_path / "persona"
    persona.mkdir()
    (persona / "SOUL.md").write_text("You are Thoth.\n", encoding="utf-8")
    model = ScriptedModel("Noted.")
    pipeline = TurnPipeline(
        sessions=Offloaded(SessionStore(db)),
        transcript=Offloaded(TranscriptStore(db)),
        persona=Offloaded(PersonaLoader((persona,))),
        skills=None,
        episodic=None,
        model=model,
        config=PipelineConfig(),
        context=ContextSources(sources),
    )

    async def turn() -> None:
        outcome = await pipeline.handle(Turn("k", "hello there", PLACE, user="U1"),
                                        RecordingSink())
        assert outcome.ok
        await pipeline.drain(5)

    try:
        asyncio.run(turn())
    finally:
        db.close()
    (request,) = model.requests
    assert isinstance(request, ModelRequest)
    return request
