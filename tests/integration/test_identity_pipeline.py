"""L2 in the turn: what a person said about themselves reaches later prompts."""

from __future__ import annotations

import asyncio

from bridge.app import build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.shared.places import Place
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
        api.tool_use("what_do_you_know_about_me", {}),
        api.text("I know you run the demo."),
        api.tool_use("forget_about_me", {}),
        api.text("Please confirm: reply 'yes, forget everything'."),
        api.tool_use("forget_about_me", {}),
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
        # Her own forget, said in the conversation, is in the audit log (only once: the
        # call before she confirmed deleted nothing).
        logged = [(e.actor, e.action, e.origin) for e in app.audit.entries()]
    finally:
        app.close()
    listing = fake_anthropic.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "Dana runs the Friday demo" in listing and "Ari" not in listing
    assert kept_before_confirming == ["Dana runs the Friday demo"]
    assert dana_after == [] and ari_after == ["Ari owns billing"]
    assert logged == [("slack:U1", "person.forget", "conversation")]


def test_a_forgotten_person_stays_forgotten_and_is_learned_again_from_then_on(
    model_settings: Settings, hashing_embedder: HashingEmbedder, fake_anthropic: FakeAnthropic
) -> None:
    from layers.identity.outbox import IngestOutbox
    from layers.identity.protocol import Person, TurnMessages
    from tests.servers import anthropic_api as api

    app = build(model_settings, embedder=hashing_embedder)
    identity = app.identity
    assert identity is not None
    dana, ari = Person("T1", "U1", "Dana"), Person("T1", "U2", "Ari")
    fake_anthropic.push(
        api.text("Noted."),
        api.tool_use("forget_about_me", {}), api.text("Please confirm."),
        api.tool_use("forget_about_me", {}), api.text("Done, forgotten."),
    )
    dm = Place("T1", "D1", "im")

    async def say(texts: list[str]) -> None:
        for text in texts:
            await app.pipeline.handle(Turn("s1", text, dm, user="U1", user_name="Dana"),
                                      RecordingSink())
        await app.drain()

    async def run() -> tuple[list[str], list[str], list[str]]:
        await say(["I prefer short answers and I work from Porto."])
        assert await identity.facts(dana)  # something to forget
        await say(["Please forget everything about me. I prefer tea.",
                   "Yes, forget everything. I prefer coffee."])
        # The DM went with the rest of her memory, the very turn that confirmed it too:
        # no session, no transcript, no exchange of hers kept (the next turn opens anew).
        assert app.sessions.dm_sessions_of("T1", "U1") == []
        assert app.episodic.store.rowids_of_dms("T1", "U1") == []
        # A turn said before the forget and still waiting (a worker's outbox row, a
        # retry) is never sent afterwards; another person's is.
        outbox = IngestOutbox(app.db)
        before = app.tombstones.forgotten_at(dana)
        assert before is not None
        outbox.add(TurnMessages(dana, "s0", "I manage the Lisbon office", "Noted.", before - 60))
        outbox.add(TurnMessages(ari, "s0", "I manage billing", "Noted.", before - 60))
        app.tombstones.record(dana)
        waiting = [turn.person.user for _, turn in outbox.claim(hold_s=1)]
        forgotten = [fact.text for fact in await identity.facts(dana)]
        fake_anthropic.push(api.text("Noted."))
        await say(["I prefer long answers."])
        return waiting, forgotten, [fact.text for fact in await identity.facts(dana)]

    try:
        waiting, forgotten, learned = asyncio.run(run())
        assert waiting == ["U2"]
        # Not Porto, not tea, not coffee (said in the "forget me" turn), not Lisbon.
        assert forgotten == []
        assert learned == ["prefers long answers"]  # learned again from then on
    finally:
        app.close()
