"""The identity outbox keeps each person's turns in order on both engines: a turn waiting
for its retry holds back that person's later turns, not anyone else's."""

from __future__ import annotations

from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Person, TurnMessages
from layers.shared.storage.database import Database

DANA, OMAR = Person("T1", "U1", "Dana"), Person("T1", "U2", "Omar")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _texts(claimed: list[tuple[int, TurnMessages]]) -> list[str]:
    return [turn.user_text for _, turn in claimed]


def test_a_turn_waiting_for_its_retry_holds_back_its_persons_later_turns(db: Database) -> None:
    clock = Clock()
    outbox = IngestOutbox(db, clock=clock)
    first = outbox.add(TurnMessages(DANA, "s1", "dana 1", "ok", 1.0))
    for person, text, at in [(OMAR, "omar 1", 2.0), (DANA, "dana 2", 3.0),
                             (OMAR, "omar 2", 4.0)]:
        outbox.add(TurnMessages(person, "s1", text, "ok", at))
    claimed = outbox.claim(hold_s=60, limit=1)
    assert _texts(claimed) == ["dana 1"]
    assert outbox.retry_later(first, lambda failures: 30.0) == 30.0  # it failed
    # Omar's go; Dana's second waits for her first.
    assert _texts(outbox.claim(hold_s=60)) == ["omar 1", "omar 2"]
    assert outbox.claim(hold_s=60) == []
    clock.now += 31
    again = outbox.claim(hold_s=60)
    assert _texts(again) == ["dana 1", "dana 2"] and again[0][1].retry
    assert not again[1][1].retry


def test_a_failure_while_the_backend_was_away_is_counted_but_holds_nothing_back(
    db: Database,
) -> None:
    clock = Clock()
    outbox = IngestOutbox(db, clock=clock)
    first = outbox.add(TurnMessages(DANA, "s1", "dana 1", "ok", 1.0))
    second = outbox.add(TurnMessages(DANA, "s1", "dana 2", "ok", 2.0))
    outbox.claim(hold_s=60)
    outbox.retry_later(first, lambda failures: 0.0)  # counted, free at once
    outbox.release_all([second])  # the batch stopped at the first: the rest freed
    clock.now += 0.01
    claimed = outbox.claim(hold_s=60)
    assert _texts(claimed) == ["dana 1", "dana 2"]
    assert claimed[0][1].retry  # its next send checks Honcho does not hold it already
