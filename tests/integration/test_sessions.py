"""Sessions, transcripts and spend, on each engine (a real SQLite file, a real PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from bridge.model.tables import SCHEMA as MODEL_USAGE
from bridge.pipeline.keyed_locks import KeyedLocks
from layers.shared.errors import BadInput
from layers.shared.places import Place
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from layers.working.sessions import SessionStore
from layers.working.tables import SCHEMA as WORKING_SCHEMA
from layers.working.transcript import TranscriptStore, TranscriptTurn

PLACE = Place("T1", "C1", "public", "1712.5")
OpenDatabase = Callable[[Sequence[Schema]], Database]
WORKING = [WORKING_SCHEMA]


def test_a_key_holds_one_open_session_and_a_new_one_after_it_ends(
    open_database: OpenDatabase,
) -> None:
    store = SessionStore(open_database(WORKING))
    first = store.open("slack:T1:C1:1712.5", PLACE)
    assert store.open("slack:T1:C1:1712.5", PLACE).id == first.id
    assert store.end(first.id) and not store.end(first.id)
    second = store.open("slack:T1:C1:1712.5", PLACE)
    assert second.id != first.id
    assert store.resume(second.id).place == PLACE
    with pytest.raises(BadInput, match="has ended"):
        store.resume(first.id)


def test_the_transcript_is_ordered_redacted_and_survives_reopening(
    open_database: OpenDatabase,
) -> None:
    db = open_database(WORKING)
    session = SessionStore(db).open("k", PLACE)
    transcript = TranscriptStore(db)
    transcript.append(session.id, TranscriptTurn("first", "one"))
    transcript.append(
        session.id, TranscriptTurn("key sk-ant-api03-" + "a" * 90 + " please", "ok", ok=False)
    )
    db.close()
    reopened = TranscriptStore(open_database(WORKING))
    first, second = reopened.turns(session.id)
    assert (first.user_text, first.reply_text, first.ok) == ("first", "one", True)
    assert "sk-ant-api03" not in second.user_text and not second.ok


def test_session_locks_serialise_one_session_and_are_dropped_after_use() -> None:
    locks = KeyedLocks()
    order: list[str] = []

    async def turn(session: str, name: str) -> None:
        async with locks.hold(session):
            order.append(f"{name} in")
            await asyncio.sleep(0.01)
            order.append(f"{name} out")

    async def run() -> None:
        await asyncio.gather(turn("a", "a1"), turn("a", "a2"), turn("b", "b1"))

    asyncio.run(run())
    assert order.index("a1 out") < order.index("a2 in")
    assert order.index("b1 in") < order.index("a1 out")  # another session did not wait
    assert len(locks) == 0


def test_spend_is_summed_per_utc_day(open_database: OpenDatabase) -> None:
    from datetime import UTC, datetime

    from bridge.model.cost_ledger import CostLedger
    from bridge.model.pricing import Usage

    ledger = CostLedger(open_database([MODEL_USAGE]))
    late = datetime(2026, 11, 21, 23, 59, tzinfo=UTC).timestamp()
    early = datetime(2026, 11, 22, 0, 1, tzinfo=UTC).timestamp()
    ledger.record_all([("m", Usage(1, 1), 1.5)], now=late)
    ledger.record_all([("m", Usage(1, 1), 0.25), ("m", Usage(2, 2), 0.5)], now=early)
    assert ledger.spent_today(now=early + 3600) == 0.75
    assert ledger.spent_today(now=late) == 1.5
