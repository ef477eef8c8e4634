"""Issue 55, fault 2: the model's API overloaded for ``--down-s`` seconds (two minutes by
default) across a burst, then back.

Real ``thoth serve`` processes (one on SQLite; with ``--replicas N`` > 1, N on one
PostgreSQL, a delivery and its retry on different replicas) against the loopback Slack
and a loopback Messages API that answers every request ``--status`` (529 overloaded by
default) for ``--down-s`` seconds (``FakeAnthropic.overloaded_for``), every
``--reset-every``-th request of the window having its connection reset instead, then
answers again. At the start of the window ``--threads`` threads arrive at once, each
as Slack sends it (the mention and its ``message`` event, each retried on another
replica: ``bench/slack_burst.py``).

Printed (``bench/fault_figures.py``): per thread, answered once (it got the line "Claude is
overloaded; I will answer when it is back" or not, and exactly one answer), told it failed
and never answered, lost (nothing), doubled (two answers); the seconds from the model's
return to the last queued answer posted; transcript turns lost or doubled (each question
stored once) and the cost ledger's rows against the requests the API billed (a row
missing counts as a write lost, one too many as doubled). The last line says how many
requests reached the API while it was overloaded (a burst must not hammer it: one call's
tries, then a probe every MODEL_PROBE_EVERY_S per replica), how many
threads were told the line, and what ``/health`` said during and after.

    python bench/fault_model.py [--down-s 120] [--threads 50] [--replicas 1]
        [--status 529] [--budget-s 30] [--reset-every 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.fault_honcho import _health_when  # noqa: E402
from bench.slack_burst import (  # noqa: E402
    Replica,
    _burst,
    _environment,
    _init,
    _places,
    _postgres,
)
from bridge.messages import MODEL_OVERLOADED_LATER  # noqa: E402
from tests.postgres import count  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

# After the model is back: how long the queued answers are waited for.
RECOVERY_WAIT_S = 180.0


def measure(down_s: float = 120.0, threads: int = 50, replicas: int = 1,
            status: int = 529, budget_s: float = 30.0, reset_every: int = 3,
            workdir: Path | None = None) -> FaultFigures:
    with tempfile.TemporaryDirectory(prefix="thoth-fault-model-") as scratch:
        home = workdir or Path(scratch)
        postgres = _postgres(home / "postgres") if replicas > 1 else None
        try:
            url = postgres.fresh_database() if postgres is not None else None
            return _run(home, url, down_s, threads, replicas, status, budget_s, reset_every)
        finally:
            if postgres is not None:
                postgres.stop()


def _run(home: Path, url: str | None, down_s: float, threads: int, replicas: int,
         status: int, budget_s: float, reset_every: int) -> FaultFigures:
    with FakeSlack(rate_limits=False) as slack, FakeAnthropic() as model:
        places = _places(slack, 0)
        slack.add_user("U1", "dana")
        environment = {**_environment(slack.url, model.url, url),
                       "MODEL_RETRY_BUDGET_S": f"{budget_s:g}"}
        if url is not None:
            _init(home / "init", environment)
        servers = [Replica(home / f"replica{n}", environment) for n in range(replicas)]
        try:
            addresses = [server.url() for server in servers]
            base = addresses[0].rsplit("/slack/events", 1)[0]
            model.overloaded_for(down_s, status=status, reset_every=reset_every)
            back_at = time.monotonic() + down_s
            _burst(addresses, threads, places)
            during = _health_when(base, lambda text: text != "ok", min(down_s, budget_s + 10))
            told = _wait_told(slack, threads, timeout_s=max(0.0, back_at - time.monotonic()))
            while time.monotonic() < back_at:
                time.sleep(0.05)
            model.back()
            hammering = model.overloaded_answers
            last_answer = _wait_answered(slack, threads, RECOVERY_WAIT_S)
            time.sleep(3.0)  # room for a wrong second answer to show up
            after = _health_when(base, lambda text: text == "ok", 15)
            answers, lines = _per_thread(slack)
            turns, distinct = _transcript(home, url)
            ledger = _ledger_rows(home, url)
            billed = len(model.billed)
        finally:
            for server in servers:
                server.stop()
    once = sum(1 for n in range(threads) if answers.get(n, 0) == 1)
    told_only = sum(1 for n in range(threads) if answers.get(n, 0) == 0 and lines.get(n))
    lost = sum(1 for n in range(threads) if answers.get(n, 0) == 0 and not lines.get(n))
    return FaultFigures(
        fault=f"model overloaded {down_s:.0f} s",
        sent=threads,
        answered_once=once,
        told_failed=told_only,
        lost=lost,
        doubled=sum(1 for n in range(threads) if answers.get(n, 0) > 1),
        recovery_s=(last_answer - back_at) if last_answer is not None else float("inf"),
        writes_lost=(threads - distinct) + max(0, billed - ledger),
        writes_doubled=(turns - distinct) + max(0, ledger - billed),
        how=(f"{threads} threads at once, {replicas} replica(s), the API answering {status}"
             f" for {down_s:.0f} s (every {reset_every}th a reset; retry budget"
             f" {budget_s:g} s);"
             f" {told} threads told the line; {hammering} requests reached the API while"
             f" overloaded; ledger rows {ledger} / requests billed {billed};"
             f" /health during: {during!r}, after: {after!r}"),
    )


def _shown(message: dict[str, Any]) -> str:
    markdown = [str(b.get("text")) for b in message.get("blocks") or []
                if isinstance(b, dict) and b.get("type") == "markdown"]
    return "".join(markdown) if markdown else str(message.get("text") or "")


def _per_thread(slack: FakeSlack) -> tuple[dict[int, int], dict[int, int]]:
    """Per question number: the answers in its thread, and the overloaded lines (thread
    ``n`` is the message ``<now>.<n>``: ``bench/slack_burst.py``'s deliveries)."""
    answers: dict[int, int] = {}
    lines: dict[int, int] = {}
    for message in slack.messages("C1"):
        thread = str(message.get("thread_ts") or "")
        if not str(message.get("user") or "").startswith("UBOT") or "." not in thread:
            continue
        number = int(thread.split(".", 1)[1])
        stream = slack.stream("C1", str(message["ts"]))
        if (stream is not None and stream["state"] != "stopped") or not _shown(message):
            continue  # a reply still being written
        if MODEL_OVERLOADED_LATER in _shown(message):
            lines[number] = lines.get(number, 0) + 1
        else:
            answers[number] = answers.get(number, 0) + 1
    return answers, lines


def _wait_told(slack: FakeSlack, threads: int, timeout_s: float) -> int:
    """Threads told the line (or answered), once all are or the time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        answers, lines = _per_thread(slack)
        done = len(set(answers) | set(lines))
        if done >= threads or time.monotonic() > deadline:
            return len(lines)
        time.sleep(0.2)


def _wait_answered(slack: FakeSlack, threads: int, timeout_s: float) -> float | None:
    """When the last thread got its answer (the loopback's clock), or None."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answers, _ = _per_thread(slack)
        if len(answers) >= threads:
            break
        time.sleep(0.2)
    answered_at = [call.received_at for call in slack.calls()
                   if call.method in ("chat.postMessage", "chat.stopStream")
                   and MODEL_OVERLOADED_LATER not in str(call.args.get("markdown_text") or "")]
    return max(answered_at) if answered_at else None


def _reader(home: Path, url: str | None) -> Callable[[str], int]:
    if url is not None:
        return lambda sql: count(url, sql)
    path = home / "replica0" / "thoth.db"

    def read(sql: str) -> int:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
            return int(conn.execute(sql).fetchone()[0])

    return read


def _transcript(home: Path, url: str | None) -> tuple[int, int]:
    read = _reader(home, url)
    return (read("SELECT COUNT(*) FROM transcript_turns WHERE ok = 1"),
            read("SELECT COUNT(DISTINCT user_text) FROM transcript_turns WHERE ok = 1"))


def _ledger_rows(home: Path, url: str | None) -> int:
    return _reader(home, url)("SELECT COUNT(*) FROM model_usage")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down-s", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--replicas", type=int, default=1,
                        help="more than one: PostgreSQL, one fresh database")
    parser.add_argument("--status", type=int, default=529, choices=(529, 500, 503))
    parser.add_argument("--budget-s", type=float, default=30.0,
                        help="MODEL_RETRY_BUDGET_S (shorter than --down-s to queue turns)")
    parser.add_argument("--reset-every", type=int, default=3,
                        help="every n-th request while overloaded is reset (0: none)")
    parser.add_argument("--workdir", type=Path,
                        help="keep the replicas' homes and logs here (default: a temp dir)")
    args = parser.parse_args(argv)
    figures = measure(args.down_s, args.threads, args.replicas, args.status, args.budget_s,
                      args.reset_every, workdir=args.workdir)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
