"""Issue 55, fault 4: Honcho is away for ``--down-s`` seconds (ten minutes by default) while
turns come in, then back.

A real ``thoth serve`` (SQLite, sending the identity outbox itself) — or with
``--workers``, one replica on PostgreSQL with ``BACKGROUND_WORK=workers`` and a real
``thoth worker`` sending it — against the loopback Slack, Messages API and Honcho. Honcho
goes away the way ``--mode`` says (``refused``: nothing listens on its port; ``status``:
503 with Retry-After; ``reset``; ``hang``); during the outage ``--threads`` threads come
in, spread over its first 70 %, each as Slack sends it (the mention and its ``message``
event, each retried), after one thread answered while Honcho was up (so the person has a
user model to look up: each message is long enough to ask for it). Then Honcho returns
(``FakeHoncho.down_for``).

Printed (``bench/fault_figures.py``): threads answered once / lost / doubled; the seconds
from Honcho's return to the identity outbox empty and every turn stored in Honcho; identity
writes lost or doubled (each turn's user message counted among Honcho's stored messages);
and in the last line, the slowest reply during the outage (turns do not wait the user
model's deadline once Honcho is known away), what ``/health`` said during and after, and
how many of the person's stored messages are out of the order they were said.

    python bench/fault_honcho.py [--down-s 600] [--threads 36] [--mode refused] [--workers]
"""

from __future__ import annotations

import argparse
import http.client
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from slack_sdk.signature import SignatureVerifier  # noqa: E402

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.fault_postgres import _worker  # noqa: E402
from bench.slack_burst import (  # noqa: E402
    REPLY_FINISHED,
    SECRET,
    Delivery,
    Replica,
    _deliveries,
    _environment,
    _init,
    _places,
    _postgres,
)
from layers.identity.ids import honcho_id  # noqa: E402
from tests.postgres import count  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.honcho_api import DOWN_MODES, FakeHoncho  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

# The threads come in over this share of the outage, so the last ones' turns are done (and
# their identity writes queued) before Honcho returns.
SPREAD = 0.7
RECOVERY_WAIT_S = 120.0
QUESTION = re.compile(r"question (\d+)")


def measure(down_s: float = 600.0, threads: int = 36, mode: str = "refused",
            workers: bool = False, workdir: Path | None = None) -> FaultFigures:
    with tempfile.TemporaryDirectory(prefix="thoth-fault-honcho-") as scratch:
        home = workdir or Path(scratch)
        postgres = _postgres(home / "postgres") if workers else None
        try:
            url = postgres.fresh_database() if postgres is not None else None
            return _run(home, url, down_s, threads, mode)
        finally:
            if postgres is not None:
                postgres.stop()


def _run(home: Path, url: str | None, down_s: float, threads: int, mode: str) -> FaultFigures:
    with FakeSlack(rate_limits=False) as slack, FakeAnthropic() as model, \
            FakeHoncho() as honcho:
        places = _places(slack, 0)
        slack.add_user("U1", "dana")
        model.push(*[api.text("A considered answer.") for _ in range(threads + 1)])
        environment = {**_environment(slack.url, model.url, url),
                       "HONCHO_URL": honcho.url, "HONCHO_API_KEY": "hch-bench"}
        if url is not None:
            environment["BACKGROUND_WORK"] = "workers"
            _init(home / "init", environment)
        replica = Replica(home / "replica", environment)
        worker = _worker(home / "worker", environment) if url is not None else None
        try:
            address = replica.url()
            base = address.rsplit("/slack/events", 1)[0]
            # Long enough for the user model (three words and more), still "question N".
            deliveries = [replace(delivery, body=delivery.body.replace(
                "question ", "what should I pack for my trip, question "))
                for delivery in _deliveries(threads + 1, 1, places)]
            warm_up, deliveries = deliveries[:4], deliveries[4:]
            _send_over(address, warm_up, 0)
            _until_sent(honcho, _outbox_left(home / "replica" / "thoth.db", url), 1,
                        time.monotonic())
            honcho.down_for(down_s, mode, retry_after=30)
            sent_at = _send_over(address, deliveries, SPREAD * down_s)
            during = _health_when(base, lambda text: text != "ok", SPREAD * down_s)
            seconds = _reply_seconds(slack, places[0].channel, sent_at,
                                     timeout_s=max(30.0, down_s))
            while honcho.is_down:
                time.sleep(0.1)
            assert honcho.went_up_at is not None
            left = _outbox_left(home / "replica" / "thoth.db", url)
            recovery_s = _until_sent(honcho, left, threads, honcho.went_up_at)
            after = _health_when(base, lambda text: text == "ok", 15)
            replies = _replies(slack, places[0].channel, set(sent_at))
            said = [(number, at) for number, at in _said(honcho) if number > 0]
        finally:
            replica.stop()
            if worker is not None:
                worker.terminate()
                worker.wait(60)
    stored = [number for number, _ in said]
    return FaultFigures(
        fault=f"honcho away {down_s:.0f} s",
        sent=threads,
        answered_once=sum(1 for n in replies if n == 1),
        told_failed=0,
        lost=sum(1 for n in replies if n == 0),
        doubled=sum(1 for n in replies if n > 1),
        recovery_s=recovery_s,
        writes_lost=threads - len(set(stored)),
        writes_doubled=len(stored) - len(set(stored)),
        how=(f"{threads} threads over {SPREAD * down_s:.0f} s while Honcho was away"
             f" ({mode}), {'a replica on PostgreSQL and a worker' if url else 'one replica'}"
             f" sending the outbox; replies during the outage: median"
             f" {statistics.median(seconds):.2f} s, slowest {seconds[-1]:.2f} s;"
             f" /health during: {during!r}, after: {after!r};"
             f" stored out of order: {_inversions([at for _, at in said])}"),
    )


def _send_over(address: str, deliveries: list[Delivery], spread_s: float) -> dict[str, float]:
    """Each thread's four deliveries at once, the threads evenly over ``spread_s``;
    returns when each thread's first delivery went (by its ts)."""
    per_thread = [deliveries[i:i + 4] for i in range(0, len(deliveries), 4)]
    gap = spread_s / max(1, len(per_thread))
    sent: dict[str, float] = {}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as pool:
        for number, thread in enumerate(per_thread):
            time.sleep(max(0.0, started + number * gap - time.monotonic()))
            sent[_ts(thread[0].body)] = time.monotonic()
            list(pool.map(lambda delivery: _deliver(address, delivery), thread))
    return sent


def _deliver(address: str, delivery: Delivery) -> int:
    parts = urlsplit(address)
    moment = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(
        timestamp=moment, body=delivery.body) or ""
    headers = {"content-type": "application/json", "x-slack-request-timestamp": moment,
               "x-slack-signature": signature}
    if delivery.retry:
        headers |= {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("POST", parts.path, body=delivery.body.encode(), headers=headers)
        return connection.getresponse().status
    except OSError:
        return 0
    finally:
        connection.close()


def _replies(slack: FakeSlack, channel: str, threads: set[str]) -> list[int]:
    """Thoth's replies in each of ``threads`` (by their ts)."""
    counts = dict.fromkeys(threads, 0)
    for message in slack.messages(channel):
        thread = str(message.get("thread_ts") or "")
        if str(message.get("user") or "").startswith("UBOT") and thread in counts:
            counts[thread] += 1
    return list(counts.values())


def _ts(body: str) -> str:
    found = re.search(r'"ts": "([0-9.]+)"', body)
    assert found is not None
    return found.group(1)


def _reply_seconds(slack: FakeSlack, channel: str, sent_at: dict[str, float],
                   timeout_s: float) -> list[float]:
    """Seconds from each thread's first delivery to its reply finished (the stream
    stopped, or the last post or edit); inf for a thread not answered in time."""
    deadline = time.monotonic() + timeout_s
    finished: dict[str, float] = {}
    while time.monotonic() < deadline:
        thread_of = {str(m["ts"]): str(m.get("thread_ts") or "") for m in slack.messages(channel)}
        for call in slack.calls():
            if call.method not in REPLY_FINISHED:
                continue
            thread = str(call.args.get("thread_ts") or thread_of.get(str(call.args.get("ts"))))
            if thread in sent_at:
                finished[thread] = max(finished.get(thread, 0.0), call.received_at)
        if len(finished) == len(sent_at):
            break
        time.sleep(0.1)
    return sorted(finished[thread] - sent_at[thread] if thread in finished else float("inf")
                  for thread in sent_at)


def _health_when(base: str, wanted: Callable[[str], bool], timeout_s: float) -> str:
    """``/health``'s body once ``wanted`` holds (or the last one seen)."""
    parts = urlsplit(base)
    deadline = time.monotonic() + timeout_s
    text = ""
    while True:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
        try:
            connection.request("GET", "/health")
            text = connection.getresponse().read().decode()
        except OSError as error:
            text = f"unreachable: {error}"
        finally:
            connection.close()
        if wanted(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def _outbox_left(db_path: Path, url: str | None) -> Callable[[], int]:
    sql = "SELECT count(*) FROM identity_outbox"
    if url is not None:
        return lambda: int(count(url, sql))

    def left() -> int:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10) as conn:
            return int(conn.execute(sql).fetchone()[0])

    return left


def _until_sent(honcho: FakeHoncho, left: Callable[[], int], threads: int,
                back_at: float) -> float:
    """Seconds from ``back_at`` to the last turn stored in Honcho, once the outbox is empty
    and every turn is there (the stores' own times: polling the outbox adds its lag)."""
    while time.monotonic() - back_at < RECOVERY_WAIT_S:
        if left() == 0 and len({number for number, _ in _said(honcho)}) >= threads:
            stores = [request.received_at for request in honcho.requests_to("/messages", "POST")
                      if request.path.endswith("/messages") and request.received_at >= back_at]
            return max(stores) - back_at
        time.sleep(0.1)
    return float("inf")


def _said(honcho: FakeHoncho) -> list[tuple[int, str]]:
    """The person's stored messages in Honcho's order: (question number, said at)."""
    workspace = honcho_id("T1")
    if workspace not in honcho.workspaces:
        return []
    said = []
    for message in honcho.stored_messages(workspace):
        found = QUESTION.search(str(message["content"]))
        if message["peer_id"] != "thoth" and found:
            said.append((int(found.group(1)), str(message["created_at"])))
    return said


def _inversions(times: list[str]) -> int:
    return sum(1 for earlier, later in zip(times, times[1:], strict=False) if later < earlier)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down-s", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=36)
    parser.add_argument("--mode", choices=DOWN_MODES, default="refused")
    parser.add_argument("--workers", action="store_true",
                        help="PostgreSQL, BACKGROUND_WORK=workers and a `thoth worker`")
    args = parser.parse_args(argv)
    figures = measure(args.down_s, args.threads, args.mode, args.workers)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
