"""L4 in the turn: the skill index, get_skill, persona reloads, offline skill matching."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from datetime import UTC

import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler

from bridge.app import Thoth, build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.procedural.drafts import DraftState
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

PLACE = Place("T1", "C1", "public", None, "general")
BODY = (
    "# Release notes\n\n1. List merged pull requests since the last tag.\n"
    "2. Group them by user-visible change.\n3. Write one line each, past tense, no jargon.\n"
)


def converse(app: Thoth, turns: list[tuple[str, str]]) -> list[TurnOutcome]:
    async def run() -> list[TurnOutcome]:
        outcomes = []
        for key, text in turns:
            outcomes.append(
                await app.pipeline.handle(Turn(key, text, PLACE, user="U1"), RecordingSink())
            )
            await app.pipeline.drain(10)
        return outcomes

    return asyncio.run(run())


@pytest.fixture
def app(model_settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(model_settings, embedder=hashing_embedder)
    yield thoth
    thoth.close()


def test_an_approved_skill_is_used_by_the_next_turn(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    draft = app.drafts.propose("release-notes", "Write release notes from merged PRs", BODY)
    app.drafts.approve(draft.id, by="U_FOUNDER")
    fake_anthropic.push(
        api.tool_use("get_skill", {"name": "release-notes"}),
        api.text("Here are the release notes."),
    )
    (outcome,) = converse(app, [("s1", "Write the release notes for 2.4")])

    assert outcome.ok and outcome.reply == "Here are the release notes."
    first, follow_up = fake_anthropic.requests
    index = first.system_texts()[1]
    assert "- release-notes: Write release notes from merged PRs" in index
    (result,) = follow_up.body["messages"][-1]["content"]
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert "Group them by user-visible change" in result["content"]


def test_an_unknown_skill_is_an_error_the_model_sees(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(api.tool_use("get_skill", {"name": "nope"}), api.text("Sorry."))
    converse(app, [("s1", "do the thing")])
    (result,) = fake_anthropic.requests[-1].body["messages"][-1]["content"]
    assert result["is_error"] is True and "incident-summary" in result["content"]


def test_an_edited_persona_file_is_picked_up_without_a_restart(
    app: Thoth, fake_anthropic: FakeAnthropic
) -> None:
    soul = app.brain.persona_dir / "SOUL.md"

    async def run() -> None:
        await app.pipeline.handle(Turn("s1", "hello", PLACE, user="U1"), RecordingSink())
        soul.write_text("# Soul\n\nAlways answer in haiku.\n")
        stat = soul.stat()
        os.utime(soul, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
        await app.pipeline.handle(Turn("s1", "hello again", PLACE, user="U1"), RecordingSink())

    asyncio.run(run())
    before, after = (r.system_texts()[0] for r in fake_anthropic.requests)
    assert "Always answer in haiku." not in before
    assert "Always answer in haiku." in after


@pytest.mark.model
def test_offline_the_matching_skills_are_shown(settings: Settings, minilm: MiniLMEmbedder) -> None:
    app = build(settings, embedder=minilm)
    try:
        asked = "Can you summarise last night's outage and its impact?"
        (outcome,) = converse(app, [("s1", asked)])
    finally:
        app.close()
    assert "Skills that may help:" in outcome.reply
    assert "- incident-summary:" in outcome.reply
    assert "handover-notes" not in outcome.reply


def test_the_scheduler_expires_old_drafts(app: Thoth) -> None:
    draft = app.drafts.propose("stale-skill", "Stale", BODY)
    with app.db.write() as conn:  # proposed eight days ago
        conn.execute(
            "UPDATE skill_drafts SET proposed_at = proposed_at - ? WHERE id = ?",
            (8 * 86_400, draft.id),
        )
    ran = threading.Event()
    errors: list[BaseException] = []

    def listener(event: JobExecutionEvent) -> None:
        if event.job_id == "expire-skill-drafts":
            if event.exception:
                errors.append(event.exception)
            ran.set()

    scheduler = BackgroundScheduler(timezone=UTC)
    scheduler.add_listener(listener, EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    app.housekeeping.schedule(scheduler, asyncio.run)
    scheduler.start()
    try:
        assert ran.wait(timeout=30)
    finally:
        scheduler.shutdown()
    assert not errors
    assert app.drafts.get(draft.id).state is DraftState.EXPIRED
