"""1,000 routines due at the same moment, run by two replicas sharing one database (issue
53): each runs once, and how long from the moment they were due to the last post.

Each replica is a process of its own, built as ``thoth serve`` or ``thoth worker`` builds
its app, on one SQLite file in a temporary folder (or ``--postgres URL``: a database of
its own, dropped after), each with a ``RoutineRunner`` of its own owner. What a run does
is the real Slack run (``bridge/slack_api/routine_posts.py``, ``SlackRoutinePosts``): a
turn of the creator's through the pipeline, with the real ``anthropic`` SDK against the
loopback Messages API (``tests/servers/anthropic_api.py``, answering at once) and the
hashing embedder, posted with the real ``slack_sdk`` client to the loopback Slack
(``tests/servers/slack_api.py``, Slack's rate limits on: chat.postMessage 1 a second a
channel after a burst of 10), counted by a wrapper around it.

The routines are their creators' own (one creator each, or ``--creators`` people)
spread over ``--channels`` channels. Each run asks Slack who its creator is now and what
its channel is (``users.info``, ``conversations.info``: cached an hour, at Slack's rates
for them), so a burst of many creators and channels waits on those rates. Both replicas
are built and waiting first; then every routine is made due at the same moment
(``next_run_at`` set in one statement) and both look at once, each as the worker's loop
does (``Worker.routines_once``): look, run what it claimed (``BATCH`` at a
look, ``AT_ONCE`` at once), look again at once after a look that found some, else after
``TICK_EVERY_S``; a replica stops once no routine is due or held. (``thoth serve`` looks
every ``TICK_EVERY_S`` and runs, batch after batch, all that is due: ``--serve-loop``.)
The time from the due moment to each post is the loopback's receipt of the
chat.postMessage (``time.monotonic()``, one clock for every process on Linux); a replica
that looks up to ``TICK_EVERY_S`` after the due minute adds that to every figure.

Checked: the runs counted by the wrapper, the ``routine_runs`` rows (one a routine, each
``posted``) and the messages the loopback Slack kept all equal the routines' count.

    python bench/routines_due.py [--routines 1000] [--channels 200] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from multiprocessing.synchronize import Event
from pathlib import Path
from queue import Queue
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from pydantic import SecretStr  # noqa: E402

from bridge.app import build  # noqa: E402
from bridge.routines.running import AT_ONCE, BATCH, RoutineRunner, RunResult  # noqa: E402
from bridge.routines.store import Routine, RoutineStore  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from bridge.slack_api.routine_posts import TICK_EVERY_S, SlackRoutinePosts  # noqa: E402
from layers.shared.offloaded import Offloaded  # noqa: E402
from layers.shared.places import Place  # noqa: E402
from tests.fakes import HashingEmbedder  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

OWNERS = ("replica-a", "replica-b")


class Counted:
    """The real run, counted: how many times the runner asked for a run, and of which."""

    def __init__(self, run: SlackRoutinePosts) -> None:
        self._run = run
        self.ran: list[str] = []
        self.ok = 0
        # Each run's own time, the turn and the post (s).
        self.took: list[float] = []

    async def __call__(self, routine: Routine, due: datetime) -> RunResult:
        self.ran.append(routine.id)
        started = time.monotonic()
        result = await self._run(routine, due)
        self.took.append(time.monotonic() - started)
        self.ok += result.ok
        return result


def _settings(home: Path, slack: FakeSlack, model: FakeAnthropic,
              postgres: str | None) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, thoth_home=home, anthropic_api_key="sk-ant-bench-key",
        anthropic_base_url=model.url, model_timeout_s=60,
        slack_bot_token=SecretStr("xoxb-bench"), slack_api_url=slack.url,
        daily_cost_cap_usd=1_000_000.0, mcp_config=home / "no-mcp.json",
        database_url=None if postgres is None else SecretStr(postgres))


def replica(settings_json: str, owner: str, serve_loop: bool, ready: Event, go: Event,
            results: Queue[dict[str, Any]]) -> None:
    """One replica: its app built, it waits for ``go``, then looks until none is due."""
    app = build(Settings.from_json(settings_json), embedder=HashingEmbedder())
    ready.set()
    go.wait()
    results.put(asyncio.run(_looks(app, owner, serve_loop)))


async def _looks(app: Any, owner: str, serve_loop: bool) -> dict[str, Any]:
    assert app.routines is not None and app.slack.client is not None
    posts = Counted(SlackRoutinePosts(app.pipeline, app.slack.client,
                                      workspace_of=app.slack.workspace_of))
    runner = RoutineRunner(app.routines.store, posts, Offloaded(app.audit),
                           grace_s=app.settings.routine_grace_min * 60, owner=owner)
    looks, started = 0, time.monotonic()
    try:
        while True:
            looked_at = time.monotonic()
            claimed = await runner.tick()
            looks += 1
            if claimed == 0 and await asyncio.to_thread(_none_left, app):
                break
            # The worker looks again at once after a look that found some, else after
            # TICK_EVERY_S; serve looks every TICK_EVERY_S whatever it found.
            if serve_loop or claimed == 0:
                await asyncio.sleep(max(0.0, looked_at + TICK_EVERY_S - time.monotonic()))
        took = time.monotonic() - started
        await app.pipeline.drain(120)
    finally:
        await app.aclose()
    return {"owner": owner, "ran": posts.ran, "ok": posts.ok, "looks": looks, "took_s": took,
            "run_s": posts.took}


def _none_left(app: Any) -> bool:
    """Whether every routine ran: none due now, none held by a replica."""
    with app.db.read() as conn:
        return int(conn.execute(
            "SELECT COUNT(*) FROM routines WHERE next_run_at <= ? OR claimed_by IS NOT NULL",
            (time.time(),)).fetchone()[0]) == 0


def _made(app: Any, count: int, channels: int, creators: int) -> list[Routine]:
    store = RoutineStore(app.db)
    made = []
    for number in range(count):
        channel, creator = number % channels, number % creators
        place = Place("T1", f"C{channel:04d}", "public", None, f"team-{channel:04d}")
        made.append(store.create(place, f"U{creator:04d}", f"person {creator}",
                                 f"bench routine {number:04d}: post what was decided today",
                                 "0 9 * * *", "Europe/London", None))
    return made


def _rows(app: Any) -> tuple[Counter[str], int, int]:
    with app.db.read() as conn:
        outcomes = Counter({str(row[0]): int(row[1]) for row in conn.execute(
            "SELECT outcome, COUNT(*) FROM routine_runs GROUP BY outcome").fetchall()})
        distinct = int(conn.execute(
            "SELECT COUNT(DISTINCT routine_id) FROM routine_runs").fetchone()[0])
        doubled = int(conn.execute(
            "SELECT COUNT(*) FROM (SELECT routine_id FROM routine_runs GROUP BY routine_id"
            " HAVING COUNT(*) > 1) AS twice").fetchone()[0])
    return outcomes, distinct, doubled


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(args: argparse.Namespace, folder: Path) -> None:
    spawn = multiprocessing.get_context("spawn")
    with FakeSlack() as slack, FakeAnthropic() as model:
        for channel in range(args.channels):
            slack.add_channel(f"C{channel:04d}", f"team-{channel:04d}")
        creators = min(args.creators or args.routines, args.routines)
        for number in range(creators):
            slack.add_user(f"U{number:04d}", f"person{number}")
        settings = _settings(folder / "home", slack, model, args.postgres)
        app = build(settings, embedder=HashingEmbedder())
        made = _made(app, args.routines, args.channels, creators)
        ready = [spawn.Event() for _ in OWNERS]
        go = spawn.Event()
        results: Queue[dict[str, Any]] = spawn.Queue()  # type: ignore[assignment]
        replicas = [spawn.Process(target=replica, args=(
            settings.to_json(), owner, args.serve_loop, built, go, results))
            for owner, built in zip(OWNERS, ready, strict=True)]
        for process in replicas:
            process.start()
        for built in ready:
            if not built.wait(300):
                raise SystemExit("a replica was not built within 300 s")
        posted_before = len(slack.calls("chat.postMessage"))
        due_wall, due_mono = time.time(), time.monotonic()
        with app.db.write() as conn:
            conn.execute("UPDATE routines SET next_run_at = ?", (due_wall,))
        go.set()
        finished = [results.get(timeout=3_600) for _ in replicas]
        for process in replicas:
            process.join(60)
        outcomes, distinct, doubled = _rows(app)
        app.close()
        posts = slack.calls("chat.postMessage")[posted_before:]
        kept = sum(len(slack.messages(f"C{channel:04d}")) for channel in range(args.channels))
        refused = slack.rate_limits.refused
        methods = Counter(call.method for call in slack.calls())
    ran = [routine for result in finished for routine in result["ran"]]
    seconds = [call.received_at - due_mono for call in posts]
    _report(args, made, finished, ran, outcomes, distinct, doubled, kept, refused, seconds,
            methods, due_wall)


def _report(args: argparse.Namespace, made: list[Routine], finished: list[dict[str, Any]],
            ran: list[str], outcomes: Counter[str], distinct: int, doubled: int, kept: int,
            refused: int, seconds: list[float], methods: Counter[str], due: float) -> None:
    engine = "PostgreSQL" if args.postgres else "SQLite (one file)"
    print(f"{len(made):,} routines due at {datetime.fromtimestamp(due, UTC):%H:%M:%S} UTC,"
          f" over {args.channels} channels, two replicas ({engine}),"
          f" {'serve loop' if args.serve_loop else 'worker loop'};"
          f" BATCH {BATCH} a look, AT_ONCE {AT_ONCE}")
    for result in sorted(finished, key=lambda r: r["owner"]):
        print(f"  {result['owner']}: ran {len(result['ran']):,} ({result['ok']:,} posted)"
              f" in {result['looks']} looks, {result['took_s']:.1f} s")
    twice = sum(1 for count in Counter(ran).values() if count > 1)
    print(f"runs asked of RunsRoutine: {len(ran):,}, of {len(set(ran)):,} routines"
          f" ({twice} asked twice)")
    print(f"routine_runs rows: {sum(outcomes.values()):,} ({dict(outcomes)}), of {distinct:,}"
          f" routines, {doubled} with more than one")
    print(f"messages kept by the loopback Slack: {kept:,}; chat.postMessage calls:"
          f" {len(seconds):,}; answered 429: {refused}")
    print("Slack calls by method: " + ", ".join(f"{m} {n}" for m, n in methods.most_common()))
    run_s = [took for result in finished for took in result["run_s"]]
    if run_s:
        print(f"one run, its turn and its post (s): p50 {percentile(run_s, 0.5):.2f}"
              f"  p95 {percentile(run_s, 0.95):.2f}  max {max(run_s):.2f}")
    if seconds:
        print(f"due -> post (s): p50 {percentile(seconds, 0.5):.2f}"
              f"  p95 {percentile(seconds, 0.95):.2f}  max {max(seconds):.2f}"
              f"  (mean {statistics.fmean(seconds):.2f})")
    every = len(made) == len(ran) == len(set(ran)) == distinct == outcomes["posted"] == kept
    print("each routine ran once: " + ("yes" if every and not doubled and not twice else "NO"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routines", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=200)
    parser.add_argument("--creators", type=int, default=0,
                        help="how many people made them (default: one each); each run asks"
                             " Slack who its creator is now (users.info, cached an hour),"
                             " at Slack's rate for that method")
    parser.add_argument("--postgres", help="a PostgreSQL server's URL (with pgvector): the"
                        " bench makes a database of its own on it, and drops it after")
    parser.add_argument("--serve-loop", action="store_true",
                        help=f"look every {TICK_EVERY_S:g} s, as thoth serve does")
    args = parser.parse_args()
    server, name = args.postgres, f"routines_bench_{uuid.uuid4().hex[:8]}"
    if server:
        args.postgres = _database(server, name, create=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            run(args, Path(folder))
    finally:
        if server:
            _database(server, name, create=False)


def _database(server: str, name: str, *, create: bool) -> str:
    """A database of the bench's own on the server ``server`` names (with pgvector, as
    Thoth needs it), made, or dropped after; its URL."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}" if create else f"DROP DATABASE {name}")
    url = urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    if create:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


if __name__ == "__main__":
    main()
