"""The queue of turns to answer once the model is back, on both engines: one row per
delivery, each conversation's oldest first and one at a time, a row taken by one process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from bridge.all_tables import ALL_SCHEMAS
from bridge.pipeline.answer_later_store import AnswerLaterStore
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema

OpenDatabase = Callable[[Sequence[Schema]], Database]
SCHEMAS = [schema for schema in ALL_SCHEMAS if schema.owner != "episodic"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_delivery_is_queued_once_and_taken_in_each_conversation_s_order(
    open_database: OpenDatabase,
) -> None:
    db = open_database(SCHEMAS)
    clock = Clock()
    mine = AnswerLaterStore(db, owner="a", clock=clock)
    theirs = AnswerLaterStore(db, owner="b", clock=clock)
    assert mine.add("Ev1", "thread-1", {"text": "first"})
    assert not theirs.add("Ev1", "thread-1", {"text": "first"})  # the same delivery again
    assert mine.add("Ev2", "thread-1", {"text": "second"})
    assert mine.add("Ev3", "thread-2", {"text": "other"})
    assert mine.waiting() == 3
    assert mine.waiting_before("thread-1") and not mine.waiting_before("thread-3")

    taken = mine.claim(limit=10, hold_s=60)
    # Each conversation's oldest only: "second" waits for "first" to be done.
    assert [row.turn["text"] for row in taken] == ["first", "other"]
    assert theirs.claim(limit=10, hold_s=60) == []  # held by "a"
    first = taken[0]
    assert not mine.waiting_before("thread-1", first.id)

    mine.again_at(first.id, clock.now + 5)  # still overloaded: back in five seconds
    assert theirs.claim(limit=10, hold_s=60) == []
    clock.now += 6
    again = theirs.claim(limit=10, hold_s=60)
    assert [(row.turn["text"], row.tries) for row in again] == [("first", 0)]
    theirs.again_at(again[0].id, clock.now, failed=True)  # Slack refused the post
    again = theirs.claim(limit=10, hold_s=60)
    assert [(row.turn["text"], row.tries) for row in again] == [("first", 1)]
    theirs.done(again[0].id)
    assert [row.turn["text"] for row in theirs.claim(limit=10, hold_s=60)] == ["second"]
    # A process that died holding a row lets it go when its hold runs out.
    clock.now += 61
    assert {row.turn["text"] for row in mine.claim(limit=10, hold_s=60)} == {"second", "other"}


def test_processes_claiming_at_once_never_take_one_row_twice(
    open_database: OpenDatabase,
) -> None:
    db = open_database(SCHEMAS)
    stores = [AnswerLaterStore(db, owner=f"replica-{n}") for n in range(4)]
    for n in range(40):
        stores[0].add(f"Ev{n}", f"thread-{n}", {"n": n})

    def take_all(store: AnswerLaterStore) -> list[int]:
        taken: list[int] = []
        while found := store.claim(limit=3, hold_s=60):
            taken.extend(row.turn["n"] for row in found)
        return taken

    with ThreadPoolExecutor(max_workers=4) as pool:
        rounds = list(pool.map(take_all, stores))
    everything = [n for taken in rounds for n in taken]
    assert sorted(everything) == list(range(40))
