"""Slack's waits shared by the replicas of one PostgreSQL (``rate_budget.py``).

A replica Slack answers 429 tells the others with one ``NOTIFY`` (the budget's name, a
hash of the workspace's token, never the token; the method and channel; when the wait
ends, as wall-clock time), and each replica ``LISTEN``s on its own connection, in a
thread, holding the method in its own budget as soon as the word arrives. So a call
never asks the database first, and the other replicas stop calling a method within
milliseconds of Slack's 429 to one of them, not at their own first 429.

Why LISTEN/NOTIFY: PostgreSQL's own, delivered to every listening session on commit, and
nothing is kept (a replica that starts later needs no past waits: they last seconds).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable

import psycopg

from bridge.slack_api.rate_budget import BudgetKey, named_budget, share_holds_with

log = logging.getLogger(__name__)

CHANNEL = "thoth_slack_holds"
# How often the listener looks up from waiting to see whether it should stop.
POLL_S = 0.5
# A database that does not answer at all (a host gone) is given up on this soon, and tried
# again.
CONNECT_TIMEOUT_S = 5


class RateWaitsAcrossReplicas:
    def __init__(self, database_url: str, *, clock: Callable[[], float] = time.time) -> None:
        self._url = database_url
        self._clock = clock
        # Who this replica is on the channel: its own words come back to it, and are
        # passed over; the others' are told apart by it.
        self.replica = secrets.token_hex(8)
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="thoth-slack-holds",
                                        daemon=True)

    def start(self) -> None:
        """Listen, and share this process's holds; returns once listening."""
        self._thread.start()
        self._listening.wait(10)
        share_holds_with(self.tell)

    def stop(self) -> None:
        share_holds_with(None)
        self._stop.set()
        self._thread.join(timeout=5)

    def tell(self, budget: str, key: BudgetKey, seconds: float) -> None:
        """Tell the other replicas of a hold (on its own short connection: a 429 is rare,
        and the loop that got it is not kept waiting on the pool)."""
        payload = json.dumps({"replica": self.replica, "budget": budget, "method": key[0],
                              "channel": key[1], "until": self._clock() + seconds})
        threading.Thread(target=self._notify, args=(payload,), daemon=True).start()

    def _notify(self, payload: str) -> None:
        try:
            with psycopg.connect(self._url, autocommit=True) as conn:
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
        except psycopg.Error as error:
            log.warning("could not tell the other replicas of Slack's wait (%s)", error)

    def _listen(self) -> None:
        # Said once when the listening stops and once when it is back: while the database
        # is away it is tried again every second, and that is not a line a second.
        failing = False
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True,
                                     connect_timeout=CONNECT_TIMEOUT_S) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    if failing:
                        failing = False
                        log.warning("listening for the other replicas' Slack waits again")
                    while not self._stop.is_set():
                        for notify in conn.notifies(timeout=POLL_S):
                            self._heard(notify.payload)
            except psycopg.Error as error:
                self._listening.set()
                if not failing:
                    failing = True
                    log.warning("listening for the other replicas' Slack waits failed (%s);"
                                " trying again every second", " ".join(str(error).split()))
                self._stop.wait(1.0)

    def _heard(self, payload: str) -> None:
        try:
            hold = json.loads(payload)
            replica, budget = str(hold["replica"]), str(hold["budget"])
            key = (str(hold["method"]), str(hold["channel"]))
            seconds = float(hold["until"]) - self._clock()
        except (ValueError, KeyError, TypeError):
            log.warning("a shared Slack wait that is not one: %.200s", payload)
            return
        if seconds > 0 and replica != self.replica:
            named_budget(budget).hold(key, seconds, told_by=replica)
