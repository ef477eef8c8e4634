"""The transcript's write after a reply: tried again without appending twice, and given up
at once, in one line, on a full disk."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bridge.pipeline.after_reply import AfterReply
from layers.shared.errors import StorageFull
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from layers.shared.storage.sqlite import SqliteDatabase
from layers.working.sessions import SessionStore
from layers.working.tables import SCHEMA
from layers.working.transcript import TranscriptStore, TranscriptTurn

PLACE = Place("T1", "C1", "public", None, "general")


class _TouchFails(SessionStore):
    """Touching the session fails ``times`` times with ``error`` (a database busy, the
    disk full), as the second of the turn's two writes."""

    def __init__(self, db: SqliteDatabase, error: Exception, times: int) -> None:
        super().__init__(db)
        self._error, self._left = error, times

    def touch(self, session_id: str, *, now: float | None = None) -> None:
        if self._left:
            self._left -= 1
            raise self._error
        super().touch(session_id, now=now)


def _record(tmp_path: Path, error: Exception, times: int) -> tuple[bool, list[TranscriptTurn]]:
    db = SqliteDatabase.open_file(tmp_path / "thoth.db", schemas=[SCHEMA])
    sessions = _TouchFails(db, error, times)
    session = sessions.open("s1", PLACE)
    transcript = TranscriptStore(db)

    async def no_wait(_: float) -> None:
        return None

    after = AfterReply(Offloaded(transcript), Offloaded[SessionStore](sessions), None,
                       retry_delays_s=(0.1, 0.1), sleep=no_wait)
    kept = asyncio.run(after.record_turn(session.id, TranscriptTurn("hello", "hi")))
    return kept, transcript.turns(session.id)


def test_a_retry_after_the_session_touch_failed_does_not_append_the_turn_twice(
    tmp_path: Path,
) -> None:
    kept, turns = _record(tmp_path, sqlite3.OperationalError("database is locked"), times=1)
    assert kept
    assert [turn.user_text for turn in turns] == ["hello"]


def test_a_full_disk_gives_the_write_up_at_once_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    full = StorageFull(str(tmp_path / "thoth.db"), "database or disk is full")
    kept, turns = _record(tmp_path, full, times=5)
    assert not kept
    assert [turn.user_text for turn in turns] == ["hello"]  # what fitted is kept
    lines = [r for r in caplog.records if r.name == "layers.shared.storage.retried"]
    assert len(lines) == 1 and "disk is full" in lines[0].getMessage()
