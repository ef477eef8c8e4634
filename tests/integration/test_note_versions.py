"""An edited memory note is a new version that replaces the old: the old stays, marked
replaced, with the chain of what replaced what; only the newest reaches a prompt."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from bridge.app import Thoth, build
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.shared.errors import BadInput
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers.anthropic_api import FakeAnthropic

GENERAL = Place("T1", "CGEN", "public", "1.1", "general")


@pytest.fixture
def app(model_settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(model_settings.model_copy(update={"founder_user_ids": ["UFOUNDER"]}),
                  embedder=hashing_embedder)
    yield thoth
    thoth.close()


def _prompt_in_general(app: Thoth, fake: FakeAnthropic) -> str:
    async def run() -> None:
        await app.pipeline.handle(Turn("slack:T1:CGEN:9.9:UDANA", "how do we release?",
                                       GENERAL, user="UDANA"), RecordingSink())
        await app.drain()

    asyncio.run(run())
    return "\n".join(fake.requests[-1].context_texts())


def test_a_kept_note_edited_is_kept_anew_and_only_the_new_words_reach_prompts(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    first = app.notes.propose("Releases need one reviewer", GENERAL, user="UDANA",
                              author_name="dana", source="🧠 reaction", session_id=None,
                              speakers=["UDANA"])
    app.notes.decide(first.id, keep=True, by="fia")
    second = app.notes.edit(first.id, "Releases need two reviewers", by="fia")
    assert second.status == "kept" and second.id != first.id
    old = app.notes.store.get(first.id)
    assert old is not None and old.status == "replaced" and old.replaced_by == second.id
    memory = (app.brain.persona_dir / "MEMORY.md").read_text()
    assert "two reviewers" in memory and "one reviewer" not in memory
    prompt = _prompt_in_general(app, fake_anthropic)
    assert "two reviewers" in prompt and "one reviewer" not in prompt
    third = app.notes.edit(second.id, "Releases need two reviewers and a green build",
                           by="fia")
    chain = app.notes.store.chain(second.id)
    assert [note.id for note in chain] == [first.id, second.id, third.id]
    assert [note.status for note in chain] == ["replaced", "replaced", "kept"]
    assert app.notes.store.chain(first.id) == chain  # the same chain from any version
    # The asker's 🧠 removed, on the card of the first version: the newest is taken back.
    withdrawn = app.notes.withdraw(first.id, by="dana", why="🧠 reaction removed")
    assert withdrawn is not None and withdrawn.id == third.id
    assert withdrawn.status == "rejected"
    assert "green build" not in (app.brain.persona_dir / "MEMORY.md").read_text()


def test_a_waiting_note_edited_still_waits_and_a_decided_one_cannot_be(app: Thoth) -> None:
    waiting = app.notes.propose("Deploys on Fridays", GENERAL, user="UDANA",
                                author_name="dana", source="🧠 reaction", session_id=None,
                                speakers=["UDANA"])
    newer = app.notes.edit(waiting.id, "No deploys on Fridays", by="fia")
    assert newer.status == "proposed"
    assert "Fridays" not in (app.brain.persona_dir / "MEMORY.md").read_text()
    assert app.notes.edit(newer.id, "No deploys on Fridays", by="fia") == newer  # unchanged
    with pytest.raises(BadInput, match="only a waiting or kept note"):
        app.notes.edit(waiting.id, "Deploys whenever", by="fia")  # replaced already
    with pytest.raises(BadInput, match="needs some text"):
        app.notes.edit(newer.id, "   ", by="fia")
    with pytest.raises(BadInput, match="at most 300 characters; this edit has 301"):
        app.notes.edit(newer.id, "x" * 301, by="fia")  # refused whole, never cut
