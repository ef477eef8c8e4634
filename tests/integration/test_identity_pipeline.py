"""L2 in the turn: what a person said about themselves reaches later prompts."""

from __future__ import annotations

import asyncio

from bridge.app import build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.working.sessions import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers.anthropic_api import FakeAnthropic

PLACE = Place("T1", "C1", "public", None, "general")


def test_a_stated_preference_reaches_the_next_sessions_user_model(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    app = build(model_settings, embedder=hashing_embedder)

    async def run() -> list[TurnOutcome]:
        outcomes = []
        for key, text in (
            ("s1", "I prefer short answers. My timezone is CET."),
            ("s2", "When should we schedule the retro for my team?"),
        ):
            turn = Turn(key, text, PLACE, user="U1", user_name="Dana")
            outcomes.append(await app.pipeline.handle(turn, RecordingSink()))
            assert app.identity_ingest is not None
            await app.pipeline.drain(10)
            # Ingest is fire-and-forget; wait for it only to observe its effect.
            assert await app.identity_ingest.drain(10) == 0
        return outcomes

    try:
        assert all(outcome.ok for outcome in asyncio.run(run()))
    finally:
        app.close()
    first, second = fake_anthropic.requests
    assert not any(t.startswith("<user-model>") for t in first.context_texts())
    (model,) = [t for t in second.context_texts() if t.startswith("<user-model>")]
    assert "Dana prefers short answers" in model and "Dana their timezone is CET" in model


def test_with_honcho_disabled_there_is_no_identity_layer(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    settings = model_settings.model_copy(update={"honcho_disabled": True})
    app = build(settings, embedder=hashing_embedder)
    try:
        assert app.identity is None and app.identity_ingest is None
        outcome = asyncio.run(
            app.pipeline.handle(Turn("s", "I prefer tea", PLACE, user="U1"), RecordingSink())
        )
        assert outcome.ok
    finally:
        app.close()


def test_a_person_can_ask_what_is_known_and_have_it_forgotten(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    from layers.identity.protocol import Person
    from tests.servers import anthropic_api as api

    app = build(model_settings, embedder=hashing_embedder)
    identity = app.identity
    assert identity is not None
    dana, ari = Person("T1", "U1", "Dana"), Person("T1", "U2", "Ari")
    fake_anthropic.push(
        api.tool_use("what_i_know_about_you", {}),
        api.text("I know you run the demo."),
        api.tool_use("forget_about_you", {}),
        api.text("Please confirm: reply 'yes, forget everything'."),
        api.tool_use("forget_about_you", {}),
        api.text("Done, forgotten."),
    )
    kept_before_confirming: list[str] = []

    async def run() -> tuple[list[str], list[str]]:
        await identity.observe(dana, ["Dana runs the Friday demo"], session_id=None, source="x")
        await identity.observe(ari, ["Ari owns billing"], session_id=None, source="x")
        # Facts typed in without a place count as said in a DM: asked in a DM with Dana.
        dm = Place("T1", "D1", "im")
        for text in ("What do you know about me?", "Please forget that.",
                     "Yes, forget everything."):
            turn = Turn("s1", text, dm, user="U1", user_name="Dana")
            await app.pipeline.handle(turn, RecordingSink())
            if text.startswith("Please"):
                # The model's call alone deletes nothing: the person must confirm.
                kept_before_confirming.extend(f.text for f in await identity.facts(dana))
        return [f.text for f in await identity.facts(dana)], [
            f.text for f in await identity.facts(ari)
        ]

    try:
        dana_after, ari_after = asyncio.run(run())
    finally:
        app.close()
    listing = fake_anthropic.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "Dana runs the Friday demo" in listing and "Ari" not in listing
    assert kept_before_confirming == ["Dana runs the Friday demo"]
    assert dana_after == [] and ari_after == ["Ari owns billing"]
