"""Issue 55, fault 5: the disk under SQLite fills (a small tmpfs made for the test,
``tests/small_disk.py``). A real Thoth, its home on that disk, answering through the real
anthropic SDK against the loopback Messages API: a turn that cannot be stored says so
(once, not answered, no model call), ``/health``'s registry says sqlite is failing, the
file stays sound, and once space is freed the next turn is answered and stored with no
restart."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bridge import messages
from bridge.app import Thoth, build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.shared.dependency_health import SQLITE
from layers.shared.places import Place
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.small_disk import MB, SmallDisk, small_disk_or_skip

PLACE = Place("T1", "C1", "public", None, "general")
SESSION_KEY = "slack:T1:C1:1700000000.000100"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    with small_disk_or_skip(tmp_path / "disk", 16 * MB) as mounted:
        yield mounted


@pytest.fixture
def thoth(disk: SmallDisk, fake_anthropic: FakeAnthropic,
          hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        thoth_home=disk.path,
        anthropic_api_key=SecretStr("sk-ant-test-key"),
        anthropic_base_url=fake_anthropic.url,
        model_timeout_s=5,
    )
    app = build(settings, embedder=hashing_embedder)
    yield app
    app.close()


def _turn(text: str, event_id: str) -> Turn:
    return Turn(SESSION_KEY, text, PLACE, user="U1", event_id=event_id)


async def _said(app: Thoth, turn: Turn) -> tuple[TurnOutcome, RecordingSink]:
    sink = RecordingSink()
    outcome = await app.pipeline.handle(turn, sink)
    await app.pipeline.drain(10)
    return outcome, sink


def _stored_turns(app: Thoth) -> list[str]:
    with app.db.read() as conn:
        rows = conn.execute("SELECT user_text FROM transcript_turns ORDER BY seq").fetchall()
    return [str(row[0]) for row in rows]


def _integrity(app: Thoth) -> list[tuple[str, ...]]:
    with app.db.read() as conn:
        return [tuple(row) for row in conn.execute("PRAGMA integrity_check").fetchall()]


def test_a_full_disk_is_said_once_and_turns_are_stored_again_once_freed(
    thoth: Thoth, disk: SmallDisk, fake_anthropic: FakeAnthropic,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        fake_anthropic.push(api.text("The deploy is on Thursday."))
        before, _ = await _said(thoth, _turn("When is the deploy?", "Ev1"))
        assert before.ok
        if thoth.identity_ingest is not None:
            # The first turn's identity row is sent and removed before the disk fills
            # (that queue's own behaviour on a full disk is not this test's).
            await thoth.identity_ingest.drain(10)
        with thoth.db.read() as conn:
            # The write-ahead log at its smallest: the turn's first write needs new room.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        disk.fill()
        requests_before = len(fake_anthropic.requests)

        full, sink = await _said(thoth, _turn("And who runs it?", "Ev2"))
        assert not full.ok
        assert sink.final == messages.DISK_FULL and sink.ok is False
        # Not answered: no model call was made for it, nothing was streamed.
        assert len(fake_anthropic.requests) == requests_before
        assert not sink.pieces
        assert thoth.health.is_failing(SQLITE)
        assert "disk full" in thoth.health.summary()
        assert _integrity(thoth) == [("ok",)]

        # The same delivery again (its inbox row could not be marked done): not told
        # twice, and not answered after it was told it would not be.
        again, quiet = await _said(thoth, _turn("And who runs it?", "Ev2"))
        assert not again.ok and quiet.final is None and quiet.events == []
        assert len(fake_anthropic.requests) == requests_before

        disk.free()
        fake_anthropic.push(api.text("Dana runs it."))
        after, shown = await _said(thoth, _turn("Who runs the deploy?", "Ev3"))
        assert after.ok and shown.final == "Dana runs it."
        assert not thoth.health.is_failing(SQLITE)

    asyncio.run(scenario())

    assert _stored_turns(thoth) == ["When is the deploy?", "Who runs the deploy?"]
    assert _integrity(thoth) == [("ok",)]
    told = [r for r in caplog.records if "is not answered" in r.getMessage()]
    assert len(told) == 1  # one line for the turn refused
    assert not [r for r in caplog.records if r.exc_info]
    health_lines = [r.getMessage() for r in caplog.records
                    if r.name == "layers.shared.dependency_health" and "sqlite" in r.getMessage()]
    assert len(health_lines) == 2


def test_a_disk_that_fills_after_the_session_opened_is_said_before_the_model_answers(
    thoth: Thoth, disk: SmallDisk, fake_anthropic: FakeAnthropic,
) -> None:
    async def scenario() -> tuple[TurnOutcome, RecordingSink]:
        # As Slack's turns come: the transport opened the session before the disk filled.
        session = await asyncio.to_thread(thoth.sessions.open, SESSION_KEY, PLACE)
        with thoth.db.read() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        disk.fill()
        sink = RecordingSink()
        outcome = await thoth.pipeline.handle(_turn("Anything new?", "Ev9"), sink,
                                              session=session)
        await thoth.pipeline.drain(10)
        return outcome, sink

    outcome, sink = asyncio.run(scenario())
    assert sink.final == messages.DISK_FULL and not outcome.ok
    # The spend could not be reserved, so the model was not called.
    assert fake_anthropic.requests == []
    assert _integrity(thoth) == [("ok",)]
