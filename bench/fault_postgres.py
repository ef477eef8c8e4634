"""Issue 55, fault 1: PostgreSQL restarted (``pg_ctl restart -m fast``) in the middle of a
burst of threads on two ``thoth serve`` replicas and a ``thoth worker``.

Real processes on a real PostgreSQL (the ``pgserver`` wheel, as the tests start it), the
loopback Slack (its rate tiers lifted: this measures the database, not Slack's tiers) and
the loopback Messages API, every reply taking ``--model-seconds`` so turns are in flight
when the database goes. Each thread's mention and its ``message`` event go to one replica
and are retried on the other, as in ``bench/slack_burst.py``. ``--down-s N`` keeps the
database stopped N seconds instead of restarting it at once.

Printed (``bench/fault_figures.py``): per thread answered once, told, lost, doubled; the
seconds from the database's return to the first reply finished after it; transcript turns
lost or doubled (one per thread is right).

    python bench/fault_postgres.py [--threads 50] [--model-seconds 1] [--down-s 0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.slack_burst import (  # noqa: E402
    REPLY_FINISHED,
    Replica,
    _burst,
    _environment,
    _init,
    _places,
    _postgres,
    _wait_for_replies,
)
from bridge import messages  # noqa: E402
from tests.postgres import PostgresForTests, count  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

REPLICAS = 2
# How far into the burst the database goes: the deliveries are acked, turns in flight.
FAULT_AFTER_S = 0.5


def measure(threads: int = 50, model_seconds: float = 1.0, down_s: float = 0.0,
            workdir: Path | None = None) -> FaultFigures:
    with tempfile.TemporaryDirectory(prefix="thoth-fault-pg-") as scratch:
        home = workdir or Path(scratch)
        server = _postgres(home / "postgres")
        try:
            return _run(server, home, threads, model_seconds, down_s)
        finally:
            server.stop()


def _run(server: PostgresForTests, home: Path, threads: int, model_seconds: float,
         down_s: float) -> FaultFigures:
    url = server.fresh_database()
    with FakeSlack(rate_limits=False) as slack, FakeAnthropic() as model:
        places = _places(slack, 0)
        slack.add_user("U1", "dana")
        model.push(*[api.text("A considered answer.", delay_s=model_seconds)
                     for _ in range(threads)])
        environment = {**_environment(slack.url, model.url, url),
                       "BACKGROUND_WORK": "workers", "INBOX_LEASE_S": "6"}
        _init(home / "init", environment)
        servers = [Replica(home / f"replica{n}", environment) for n in range(REPLICAS)]
        worker = _worker(home / "worker", environment)
        try:
            addresses = [replica.url() for replica in servers]
            burst = threading.Thread(target=_burst, args=(addresses, threads, places))
            burst.start()
            time.sleep(FAULT_AFTER_S)
            if down_s > 0:
                server.go_down()
                time.sleep(down_s)
                server.come_back()
            else:
                server.restart()
            back = time.monotonic()
            burst.join()
            replies, _ = _wait_for_replies(slack, threads, places,
                                           timeout_s=90 + 2 * threads + model_seconds)
            after = [call.received_at for call in slack.calls()
                     if call.method in REPLY_FINISHED and call.received_at >= back]
            recovery_s = (min(after) - back) if after else float("inf")
            told = _told(slack, places[0].channel)
            transcript = _turns_per_thread(url)
            left = count(url, "SELECT count(*) FROM slack_inbox")
        finally:
            for replica in servers:
                replica.stop()
            worker.terminate()
            worker.wait(60)
    answered = [n for n in replies if n >= 1]
    fault = ("pg_ctl restart -m fast" if down_s <= 0
             else f"pg_ctl stop -m fast, {down_s:.0f} s, start")
    return FaultFigures(
        fault="postgres restart" if down_s <= 0 else f"postgres away {down_s:.0f} s",
        sent=threads,
        answered_once=sum(1 for n in replies if n == 1) - told,
        told_failed=told,
        lost=threads - len(answered),
        doubled=sum(1 for n in replies if n > 1),
        recovery_s=recovery_s,
        writes_lost=threads - len(transcript),
        writes_doubled=sum(1 for n in transcript if n > 1),
        how=(f"{threads} threads (mention + message event, each retried on the other"
             f" replica) on {REPLICAS} replicas and a worker; {fault} {FAULT_AFTER_S} s into"
             f" the burst; replies take {model_seconds} s; inbox rows left: {left}"),
    )


def _worker(home: Path, environment: dict[str, str]) -> subprocess.Popen[str]:
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "bridge", "worker"], cwd=home,
        env={**environment, "THOTH_HOME": str(home)}, stdout=subprocess.DEVNULL,
        stderr=(home / "worker.log").open("w"), text=True)


def _told(slack: FakeSlack, channel: str) -> int:
    return sum(1 for message in slack.messages(channel)
               if messages.NOT_KEPT_DATABASE_AWAY in str(message.get("text") or ""))


def _turns_per_thread(url: str) -> list[int]:
    """Transcript turns per session (each thread is one session)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT count(*) FROM transcript_turns GROUP BY session_id"
                            ).fetchall()
    return [int(row[0]) for row in rows]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--model-seconds", type=float, default=1.0)
    parser.add_argument("--down-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    figures = measure(args.threads, args.model_seconds, args.down_s)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
