"""What replicas share through the database, on both engines: each replica opens the
database on its own (a second ``Database``, as a second process would), and a clock
stands in for time passing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from bridge.all_tables import ALL_SCHEMAS
from bridge.slack.inbox import SlackInbox
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Person, TurnMessages
from layers.shared.places import Place
from layers.shared.storage.database import Database
from layers.shared.storage.leases import Leases
from layers.shared.storage.migrations import Schema
from layers.working.sessions import SessionStore
from reflection.followups import Followups
from reflection.state import Claimed, ReflectionState

OpenDatabase = Callable[[Sequence[Schema]], Database]
SCHEMAS = [schema for schema in ALL_SCHEMAS if schema.owner in ("storage", "slack")]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_delivery_and_its_retries_are_taken_once_whichever_replica_they_reach(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    one = SlackInbox(open_database(SCHEMAS), owner="one", lease_s=30, clock=clock)
    two = SlackInbox(open_database(SCHEMAS), owner="two", lease_s=30, clock=clock)
    payload = {"text": "hello"}
    taken = one.take(("event:Ev1", "msg:C1:1.1"), lane="T:C1:1.1", kind="message",
                     payload=payload)
    assert taken is not None and taken.payload == payload
    # Slack's retry reaches the other replica; the mention's message event a third time.
    assert two.take(("event:Ev1",), lane="T:C1:1.1", kind="message", payload=payload) is None
    assert two.take(("event:Ev2", "msg:C1:1.1"), lane="T:C1:1.1", kind="message",
                    payload=payload) is None
    assert one.waiting() == 1


def test_a_lane_runs_in_the_order_deliveries_were_taken_across_replicas(
    open_database: OpenDatabase,
) -> None:
    one = SlackInbox(open_database(SCHEMAS), owner="one", lease_s=30)
    two = SlackInbox(open_database(SCHEMAS), owner="two", lease_s=30)
    first = one.take(("event:A",), lane="thread-1", kind="message", payload={})
    second = two.take(("event:B",), lane="thread-1", kind="message", payload={})
    elsewhere = two.take(("event:C",), lane="thread-2", kind="message", payload={})
    assert first and second and elsewhere
    assert one.is_next(first)
    assert not two.is_next(second)  # waits for the first, held by the other replica
    assert two.is_next(elsewhere)  # another thread does not wait
    one.done(first)
    assert two.is_next(second)
    two.done(second)
    two.done(elsewhere)
    assert one.waiting() == 0


def test_a_dead_replicas_deliveries_are_taken_over_once_its_lease_runs_out(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    dead = SlackInbox(open_database(SCHEMAS), owner="dead", lease_s=30, clock=clock)
    alive = SlackInbox(open_database(SCHEMAS), owner="alive", lease_s=30, clock=clock)
    other = SlackInbox(open_database(SCHEMAS), owner="other", lease_s=30, clock=clock)
    left = dead.take(("event:A",), lane="thread-1", kind="message", payload={"text": "a"})
    later = dead.take(("event:B",), lane="thread-1", kind="message", payload={"text": "b"})
    mine = alive.take(("event:C",), lane="thread-2", kind="message", payload={})
    assert left and later and mine
    clock.now += 20
    assert alive.renew([mine.id]) == 1  # the living renew theirs; the dead cannot
    assert alive.orphans() == []  # not yet: the lease has 10 s to run
    clock.now += 15
    taken_over = alive.orphans()
    assert [entry.payload["text"] for entry in taken_over] == ["a", "b"]  # in lane order
    assert other.orphans() == []  # taken over once: now leased to `alive`
    assert alive.is_next(taken_over[0]) and not alive.is_next(taken_over[1])


def test_a_row_its_taker_is_not_running_is_taken_over_too(
    open_database: OpenDatabase,
) -> None:
    """A take whose commit landed but whose answer was lost (the database restarted):
    the process that took it renews only what it runs, so the row is taken over."""
    clock = Clock()
    taker = SlackInbox(open_database(SCHEMAS), owner="taker", lease_s=30, clock=clock)
    running = taker.take(("event:R",), lane="thread-1", kind="message", payload={"text": "r"})
    lost = taker.take(("event:L",), lane="thread-2", kind="message", payload={"text": "l"})
    assert running and lost
    clock.now += 20
    assert taker.renew([running.id]) == 1
    assert taker.renew([]) == 0
    clock.now += 15
    assert [entry.payload["text"] for entry in taker.orphans()] == ["l"]


def test_a_lease_is_held_by_one_replica_until_given_back_or_run_out(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    one = Leases(open_database(SCHEMAS), owner="one", clock=clock)
    two = Leases(open_database(SCHEMAS), owner="two", clock=clock)
    assert one.take("idle-sweep", 60)
    assert not two.take("idle-sweep", 60)
    assert one.take("idle-sweep", 60)  # its holder extends it
    assert two.holder("idle-sweep") == "one"
    one.give_back("idle-sweep")
    assert two.take("idle-sweep", 60)
    assert two.take("post-followups", 60)
    clock.now += 61  # `two` died holding both
    assert one.holder("idle-sweep") is None
    assert one.take("idle-sweep", 60)
    two.give_back("idle-sweep")  # a late give-back does not free someone else's
    assert two.holder("idle-sweep") == "one"


QUEUE_SCHEMAS = [schema for schema in ALL_SCHEMAS if schema.owner != "episodic"]


def test_workers_claiming_at_once_each_get_another_reflection(
    open_database: OpenDatabase,
) -> None:
    """Eight workers (threads, each with its own connection) claim from one queue of
    twenty at the same moment: every session is claimed exactly once."""
    first = ReflectionState(open_database(QUEUE_SCHEMAS), run_timeout_s=600)
    for number in range(20):
        assert first.queue(f"s{number:02d}", summary=number == 0)
    workers = [ReflectionState(open_database(QUEUE_SCHEMAS), run_timeout_s=600)
               for _ in range(8)]
    start = threading.Barrier(len(workers))

    def claim_all(state: ReflectionState) -> list[Claimed]:
        start.wait()
        claimed = []
        while (one := state.claim_next()) is not None:
            claimed.append(one)
        return claimed

    with ThreadPoolExecutor(len(workers)) as pool:
        results = list(pool.map(claim_all, workers))
    sessions = [claimed.session_id for result in results for claimed in result]
    assert sorted(sessions) == [f"s{number:02d}" for number in range(20)]
    summaries = {c.session_id for result in results for c in result if c.summary}
    assert summaries == {"s00"}  # a `/done`'s summary goes with its claim
    assert first.counts() == {"running": 20}
    assert first.claimed("s05") is not None


def test_a_dead_workers_reflection_is_claimed_again_after_its_timeout(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    state = ReflectionState(open_database(QUEUE_SCHEMAS), run_timeout_s=300, clock=clock)
    state.queue("s1")
    assert state.claim_next() == Claimed("s1", summary=False)
    clock.now += 299
    assert state.claim_next() is None  # running, its worker may be alive
    clock.now += 2
    again = state.claim_next()
    assert again == Claimed("s1", summary=False)
    row = state.get("s1")
    assert row is not None and row.attempts == 2


def test_a_follow_up_is_claimed_by_one_poster_and_due_again_if_posting_fails(
    open_database: OpenDatabase,
) -> None:
    db = open_database(QUEUE_SCHEMAS)
    session = SessionStore(db).open("slack:T1:C1:7.0", Place("T1", "C1", "public", "7.0"),
                                    now=100.0)
    Followups(db).schedule(session, "Did the deploy go out?", due_at=200.0, now=100.0)
    one, two = Followups(db), Followups(open_database(QUEUE_SCHEMAS))
    (claimed,) = one.claim_due(200.0, hold_s=300)
    assert claimed.text == "Did the deploy go out?"
    assert two.claim_due(201.0, hold_s=300) == []
    one.retry_at(session.id, 260.0)  # Slack refused: due again in a minute
    assert two.claim_due(259.0, hold_s=300) == []
    assert [f.session_id for f in two.claim_due(261.0, hold_s=300)] == [session.id]
    two.mark_sent(session.id, 262.0)
    assert one.claim_due(10_000.0, hold_s=300) == []


def test_an_outbox_turn_is_sent_by_one_process_and_freed_when_its_sender_lets_go(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    dana = Person("T1", "U1", "dana")
    here = IngestOutbox(open_database(QUEUE_SCHEMAS), clock=clock)
    worker = IngestOutbox(open_database(QUEUE_SCHEMAS), clock=clock)
    held = here.add(TurnMessages(dana, "s1", "I prefer short answers", "Noted.", 1.0),
                    hold_s=600)
    free = here.add(TurnMessages(dana, "s1", "I work on payments", "Noted.", 2.0))
    (claimed,) = worker.claim(hold_s=60)  # the held one is this process's to send
    assert claimed[0] == free and not claimed[1].retry
    assert worker.claim(hold_s=60) == []
    assert worker.retry_later(free, lambda failures: 30.0 * failures) == 30  # backend down
    here.release(held)  # the process gave up on it (or shut down)
    assert [entry for entry, _ in worker.claim(hold_s=60)] == [held]
    clock.now += 31
    ((again, turn),) = worker.claim(hold_s=60)
    assert again == free and turn.retry  # tried before: the backend checks it is new
    worker.remove(held)
    worker.remove(free)
    assert here.count() == 0
