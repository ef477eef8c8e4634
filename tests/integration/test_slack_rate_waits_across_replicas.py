"""Slack's waits shared by replicas over PostgreSQL's LISTEN/NOTIFY
(bridge/slack_api/rate_waits_across_replicas.py), against a real PostgreSQL: a 429 here
is told to the others, and one told by another replica holds the method here."""

from __future__ import annotations

import json
import time

import psycopg

from bridge.slack_api.rate_budget import budget_for, budget_key, named_budget
from bridge.slack_api.rate_waits_across_replicas import CHANNEL, RateWaitsAcrossReplicas
from tests.postgres import PostgresForTests
from tests.waiting import wait_until

API = "http://holds.invalid/api/"


def test_a_wait_is_told_to_the_other_replicas_and_theirs_hold_here(
    postgres: PostgresForTests,
) -> None:
    url = postgres.fresh_database()
    holds = RateWaitsAcrossReplicas(url)
    holds.start()
    try:
        with psycopg.connect(url, autocommit=True) as other:
            other.execute(f"LISTEN {CHANNEL}")
            # Slack's 429 to this replica: the other hears of it, by the budget's name.
            budget = budget_for(API, "xoxb-replica-token")
            budget.hold(budget_key("chat.startStream", None), 3.0)
            heard = [json.loads(n.payload) for n in other.notifies(timeout=5, stop_after=1)]
            assert heard and heard[0]["budget"] == budget.name
            assert heard[0]["method"] == "chat.startStream"
            assert "xoxb-replica-token" not in json.dumps(heard)

            # Another replica's 429, for a workspace this one has not called yet.
            key = budget_key("chat.postMessage", {"channel": "C7"})
            other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({
                "replica": "other", "budget": "b" * 64, "method": key[0], "channel": key[1],
                "until": time.time() + 30})))
            wait_until(lambda: named_budget("b" * 64).delay_for(key) > 20.0, 10)
            # Bad words on the channel are passed over; the listener goes on.
            other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, "not a hold"))
            other.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps({
                "replica": "other", "budget": "c" * 64, "method": "chat.update", "channel": "",
                "until": time.time() + 30})))
            wait_until(lambda: named_budget("c" * 64).delay_for(("chat.update", "")) > 20.0,
                       10)
    finally:
        holds.stop()
    # Stopped: this process's holds are its own again.
    with psycopg.connect(url, autocommit=True) as other:
        other.execute(f"LISTEN {CHANNEL}")
        budget_for(API, "xoxb-replica-token").hold(("chat.update", ""), 1.0)
        assert list(other.notifies(timeout=1, stop_after=1)) == []
