"""What replicas share through the database, on both engines: each replica opens the
database on its own (a second ``Database``, as a second process would), and a clock
stands in for time passing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bridge.schemas import ALL_SCHEMAS
from bridge.slack.inbox import SlackInbox
from layers.storage.database import Database
from layers.storage.leases import Leases
from layers.storage.migrations import Schema

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
    assert alive.renew() == 1  # the living renew theirs; the dead cannot
    assert alive.orphans() == []  # not yet: the lease has 10 s to run
    clock.now += 15
    taken_over = alive.orphans()
    assert [entry.payload["text"] for entry in taken_over] == ["a", "b"]  # in lane order
    assert other.orphans() == []  # taken over once: now leased to `alive`
    assert alive.is_next(taken_over[0]) and not alive.is_next(taken_over[1])


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
