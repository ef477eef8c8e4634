"""Issue 55, fault 3: Slack fails the posting and streaming methods during a burst.

A real ``thoth serve`` child (``bench/slack_burst.py``'s ``Replica``, SQLite) gets a
burst of ``--threads`` threads (four signed deliveries each, as Slack sends them), whose
model answers come spread over the window (the n-th after ``n/threads`` of it), while
the loopback Slack fails ``chat.postMessage``, ``chat.update`` and the streaming methods
for ``--down-s`` seconds (default 60), in three equal parts, each a way Slack fails:

1. every call made, then answered 500 (the client cannot tell it from one not made);
2. every connection reset before an answer, the call not made;
3. every call held past the client's timeout (``SLACK_TIMEOUT_S``), made, then 503.

Then Slack is back. Counted in the loopback's threads: answered once (one reply, the
model's answer, whole), told failed (one reply saying something went wrong), lost (no
reply), doubled (more than one). Recovery: seconds from Slack's return to the first
reply finished after it; "all answered" is when the last one was. The replica's log is
read for its "slack is failing" / "is back" lines and replies it gave up on; /health is
asked during the window (degraded) and after (ok). Stored writes: each thread's
transcript turn in the replica's database (one expected, none lost or doubled).

    python bench/fault_slack.py [--threads 16] [--down-s 60] [--model-seconds 0.5]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from urllib.error import URLError

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.slack_burst import Replica, _burst, _environment, _places  # noqa: E402
from tests.integration.slack_harness import shown  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

ANSWER = "A considered answer."
FAILING = frozenset({"chat.postMessage", "chat.update", "chat.startStream",
                     "chat.appendStream", "chat.stopStream"})
REPLY_FINISHED = frozenset({"chat.stopStream", "chat.postMessage", "chat.update"})
# The client's timeout in the bench: the hanging part holds each call a second longer.
SLACK_TIMEOUT_S = 5.0
# As many threads as ``thoth serve`` runs turns at once (``runner.MAX_CONCURRENT_TURNS``):
# every turn runs from the start, so each reply meets Slack when its model answer comes,
# spread over the window, not when a slot frees (a turn waiting on Slack keeps its slot).
THREADS = 16
# After the last reply, how long to keep looking for a second one.
SETTLE_S = 3.0


def measure(*, threads: int = THREADS, down_s: float = 60.0, model_seconds: float = 0.5,
            slack_timeout_s: float = SLACK_TIMEOUT_S, scratch: Path | None = None,
            ) -> FaultFigures:
    with tempfile.TemporaryDirectory() as made:
        home = (scratch or Path(made)) / "fault-slack"
        return _run(threads, down_s, model_seconds, slack_timeout_s, home)


def _run(threads: int, down_s: float, model_seconds: float, slack_timeout_s: float,
         home: Path) -> FaultFigures:
    with FakeSlack() as slack, FakeAnthropic() as model:
        places = _places(slack, 0)
        slack.add_user("U1", "dana")
        # The model's answers come spread over the window, so that replies meet each way
        # Slack fails, and the last ones wait for it to come back.
        spread = 0.95 * down_s
        model.push(*[api.text(ANSWER, delay_s=model_seconds + spread * n / threads)
                     for n in range(threads)])
        environment = {**_environment(slack.url, model.url, None),
                       "SLACK_TIMEOUT_S": str(slack_timeout_s)}
        server = Replica(home / "replica0", environment)
        try:
            address = server.url()
            health_url = address.rsplit("/slack/events", 1)[0] + "/health"
            third = down_s / 3
            began = time.monotonic()
            slack.down_for(third, FAILING, how="5xx", status=500, applied=True)
            slack.down_for(third, FAILING, how="reset", after_s=third)
            slack.down_for(third, FAILING, how="hang", status=503, applied=True,
                           hang_s=slack_timeout_s + 1, after_s=2 * third)
            back_at = began + down_s
            seen: list[str] = []
            watching = threading.Thread(target=_watch_health,
                                        args=(health_url, back_at, seen), daemon=True)
            watching.start()
            _burst([address], threads, places)
            finished = _wait_for_answers(slack, threads, deadline=back_at + 240)
            watching.join(timeout=10)
            after, ok_at = _health_ok(health_url, deadline=max(back_at, time.monotonic()) + 60)
        finally:
            exit_code = server.stop()
        counts = _replies_per_thread(slack, threads)
        log = server.log_path.read_text()
        turns = _turns_per_thread(home / "replica0" / "thoth.db", threads)
    once = sum(1 for replies in counts if len(replies) == 1 and shown(replies[0]) == ANSWER)
    told = sum(1 for replies in counts if len(replies) == 1 and shown(replies[0]) != ANSWER)
    lost = sum(1 for replies in counts if not replies)
    doubled = sum(1 for replies in counts if len(replies) > 1)
    firsts = [call.received_at for call in slack.calls()
              if call.method in REPLY_FINISHED and call.received_at >= back_at]
    recovery = (min(firsts) - back_at) if firsts else float("inf")
    degraded_seen = any(text.startswith("degraded") for text in seen)
    how = (f"{threads} threads; Slack failed {', '.join(sorted(FAILING))} for {down_s:g} s"
           f" (500 after doing it, resets, hangs past the {slack_timeout_s:g} s timeout);"
           f" all answered {max(0.0, finished - back_at):.1f} s after Slack was back;"
           f" /health degraded during: {'yes' if degraded_seen else 'no'}, {after!r}"
           f" {ok_at - back_at:.1f} s after Slack was back;"
           f" log: {log.count('slack is failing')} 'failing' /"
           f" {log.count('slack is back')} 'back' lines,"
           f" {log.count('was not delivered')} replies given up; exit {exit_code}")
    return FaultFigures(
        fault="slack 5xx", sent=threads, answered_once=once, told_failed=told, lost=lost,
        doubled=doubled, recovery_s=recovery,
        writes_lost=sum(1 for count in turns if count == 0),
        writes_doubled=sum(1 for count in turns if count > 1), how=how)


def _watch_health(url: str, until: float, seen: list[str]) -> None:
    while time.monotonic() < until:
        seen.append(_health(url))
        time.sleep(1.0)


def _health_ok(url: str, *, deadline: float) -> tuple[str, float]:
    """/health's answer once it is "ok" (or at the deadline), and when."""
    while True:
        said = _health(url)
        if said == "ok" or time.monotonic() >= deadline:
            return said, time.monotonic()
        time.sleep(0.5)


def _health(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode()[:200])
    except (URLError, OSError) as error:
        return f"unreachable ({error})"


def _threads(slack: FakeSlack) -> dict[str, list[dict[str, object]]]:
    """The agent's messages in each thread, by thread ts."""
    found: dict[str, list[dict[str, object]]] = {}
    for message in slack.messages("C1"):
        thread = message.get("thread_ts")
        if str(message.get("user") or "").startswith("UBOT") and thread:
            found.setdefault(str(thread), []).append(message)
    return found


def _replies_per_thread(slack: FakeSlack, threads: int) -> list[list[dict[str, object]]]:
    found = list(_threads(slack).values())
    return found + [[] for _ in range(threads - len(found))]


def _wait_for_answers(slack: FakeSlack, threads: int, *, deadline: float) -> float:
    """When every thread had a finished reply (or the deadline), after ``SETTLE_S`` more
    to let a second one show."""
    while time.monotonic() < deadline:
        finished = [replies for replies in _threads(slack).values()
                    if any(_finished(slack, message) for message in replies)]
        if len(finished) >= threads:
            break
        time.sleep(0.2)
    done = time.monotonic()
    time.sleep(SETTLE_S)
    return done


def _finished(slack: FakeSlack, message: dict[str, object]) -> bool:
    stream = slack.stream("C1", str(message["ts"]))
    return (stream is None or stream["state"] == "stopped") and bool(shown(message))


def _turns_per_thread(database: Path, threads: int) -> list[int]:
    """Transcript turns per thread's session (one expected each)."""
    if not database.exists():
        return [0] * threads
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT s.thread_ts, COUNT(t.seq) FROM sessions s"
            " LEFT JOIN transcript_turns t ON t.session_id = s.id GROUP BY s.thread_ts"
        ).fetchall()
    counts = [int(count) for _, count in rows]
    return counts + [0] * (threads - len(counts))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=THREADS)
    parser.add_argument("--down-s", type=float, default=60.0,
                        help="how long Slack fails (three equal parts: 500 after doing"
                             " it, resets, hangs)")
    parser.add_argument("--model-seconds", type=float, default=0.5)
    parser.add_argument("--slack-timeout-s", type=float, default=SLACK_TIMEOUT_S)
    args = parser.parse_args(argv)
    figures = measure(threads=args.threads, down_s=args.down_s,
                      model_seconds=args.model_seconds, slack_timeout_s=args.slack_timeout_s)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
