"""A burst of Slack deliveries at ``thoth serve`` in HTTP mode, as Slack sends them.

``thoth serve`` runs as real child processes (uvicorn, Bolt, the real SDKs) against
the loopback Slack Web API (with Slack's rate tiers) and a loopback Messages API
whose every reply takes ``--model-seconds`` (0: an instant model). For each of
``--threads`` threads, four signed deliveries go out at once, each on its own
connection: the ``app_mention``, the ``message`` event of the same message, and a
retry of each (``X-Slack-Retry-Num: 1``).

With ``--replicas N`` (N > 1: PostgreSQL, one fresh database) N replicas run, each with
its own ``THOTH_HOME``, as behind a load balancer: a delivery goes to replica i and its
retry to replica i + 1, so a retry always lands on another replica than the first try
(docs/deployment.md). PostgreSQL is a real server started from the
``pgserver`` wheel, as the tests start it (``tests/postgres.py``).

Printed, one row per run: ack latency p50 / p99 / max, connection errors, answers other
than 200, turns/s (messages answered ÷ the wall time from the first delivery to the
last reply finished in Slack), replies per thread (each thread answered once), model
calls, Slack's 429s and the calls that came inside a Retry-After (issue 36: none).
``--compare 1,3`` runs 1 replica and then 3 on PostgreSQL, back to back, into one
table.

The loopback Slack keeps Slack's rate tiers by default, and they cap a burst's turns/s
whatever the replicas: a streamed reply takes ``chat.startStream`` and
``chat.stopStream``, Tier 2 (20 a minute per workspace, after a burst of 20), so past
20 threads the replies wait for Slack. ``--no-rate-limits`` lifts them, to see what the
replicas themselves can do. The replies are waited for up to 60 s and 2 s a thread
(Slack's one post a second per channel, for the threads that do not stream).

``--workspaces N`` installs Thoth into N workspaces through Slack's OAuth flow (no bot
token: ``SLACK_TOKEN_KEYS``, "Add to Slack" driven through the first replica) and spreads
the threads over them, each workspace with its own channel, token and rate limits (Slack's
are per workspace): thread i goes to workspace i mod N.

``--half-open N`` opens N more connections to the first replica before the burst and
holds them through it, each having sent part of a request's headers and no more (a
slowloris): the deliveries must still be acked 200 in time.

    python bench/slack_burst.py [--threads 20] [--model-seconds 2]
        [--replicas 1] [--database sqlite|postgresql] [--half-open 500]
    python bench/slack_burst.py --compare 1,3 --threads 30 --model-seconds 0 [--no-rate-limits]
    python bench/slack_burst.py --threads 50 --workspaces 5 [--compare 1,2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NamedTuple
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from slack_sdk.signature import SignatureVerifier  # noqa: E402

from layers.shared.token_cipher import TokenCipher  # noqa: E402
from tests.postgres import PostgresForTests  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402
from tests.servers.slack_install import AppInstalls, Install, install_through  # noqa: E402

SECRET = "bench-signing-secret"
CHANNEL = "C1"
CLIENT_ID = "bench.client"
CLIENT_SECRET = "bench-client-secret"
# A new key each run: the installs of a run are its own.
TOKEN_KEY = TokenCipher.new_key()
START_TIMEOUT_S = 120.0
DATABASES = ("sqlite", "postgresql")
# The Slack calls that leave a reply finished in the thread: the stream closed, or a
# plain post or its last edit where streaming is refused.
REPLY_FINISHED = frozenset({"chat.stopStream", "chat.postMessage", "chat.update"})


@dataclass(frozen=True)
class Delivery:
    body: str
    retry: bool
    replica: int  # which replica the load balancer sends it to


@dataclass(frozen=True)
class BurstResult:
    replicas: int
    database: str
    deliveries: int
    latencies: list[float]  # seconds, of the deliveries that were answered
    connection_errors: int
    not_ok: int  # answers other than 200
    wall_s: float  # first delivery sent to last reply finished
    replies: list[int]  # per thread
    model_calls: int
    exit_codes: list[int | None]
    expected_threads: int
    refused: int = 0  # Slack's 429s
    early: int = 0  # calls that came inside a Retry-After Slack had given

    @property
    def answered(self) -> int:
        return sum(1 for count in self.replies if count >= 1)

    @property
    def ok(self) -> bool:
        return (self.connection_errors == 0 and self.not_ok == 0 and set(self.replies) == {1}
                and self.model_calls == self.expected_threads
                and all(code == 0 for code in self.exit_codes))


class Replica:
    """One ``thoth serve`` process; its stdout read as it comes (the listening URL),
    its stderr kept in a file to show if it fails."""

    def __init__(self, home: Path, environment: dict[str, str], port: int = 0) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.log_path = home / "serve.log"
        self._log: IO[str] = self.log_path.open("w")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", "--host", "127.0.0.1", "--port",
             str(port)],
            cwd=home, env={**environment, "THOTH_HOME": str(home)}, stdout=subprocess.PIPE,
            stderr=self._log, text=True,
        )
        self._url: list[str] = []
        self._listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:  # read to the end, so a full pipe never blocks it
            if "listens on" in line and not self._url:
                self._url.append(line.split("listens on", 1)[1].strip())
                self._listening.set()

    def url(self) -> str:
        if not self._listening.wait(START_TIMEOUT_S):
            raise SystemExit(f"thoth serve did not start (exit code {self.popen.poll()}):"
                             f" {self.log_path.read_text()[-2000:]}")
        return self._url[0]

    def stop(self) -> int | None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return None
        finally:
            self._log.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--model-seconds", type=float, default=2.0,
                        help="how long each model reply takes (0: an instant model)")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--database", choices=DATABASES,
                        help="sqlite (the default for one replica) or postgresql (the default,"
                             " and the only choice, for more)")
    parser.add_argument("--compare", metavar="N,M",
                        help="run these replica counts back to back on PostgreSQL, one table")
    parser.add_argument("--no-rate-limits", action="store_true",
                        help="the loopback Slack without Slack's rate tiers")
    parser.add_argument("--half-open", type=int, default=0, metavar="N",
                        help="hold N connections that never finish their headers")
    parser.add_argument("--workspaces", type=int, default=0, metavar="N",
                        help="install into N workspaces through Slack's OAuth flow (no bot"
                             " token) and spread the threads over them")
    args = parser.parse_args(argv)
    if args.compare:
        try:
            counts = [int(count) for count in args.compare.split(",")]
        except ValueError:
            parser.error(f"--compare takes replica counts such as 1,3, not {args.compare!r}")
        database = args.database or "postgresql"
    else:
        counts = [args.replicas]
        database = args.database or ("sqlite" if args.replicas == 1 else "postgresql")
    if min(counts) < 1 or args.threads < 1 or args.model_seconds < 0:
        parser.error("replica and thread counts must be at least 1, model seconds at least 0")
    if database == "sqlite" and (max(counts) > 1 or args.compare):
        parser.error("several replicas share one PostgreSQL: use --database postgresql")
    with tempfile.TemporaryDirectory() as scratch:
        postgres = _postgres(Path(scratch) / "pg") if database == "postgresql" else None
        try:
            results = []
            for count in counts:
                url = postgres.fresh_database() if postgres is not None else None
                results.append(burst_run(count, database, url, args.threads,
                                         args.model_seconds, Path(scratch) / f"run{count}",
                                         rate_limits=not args.no_rate_limits,
                                         half_open=args.half_open,
                                         workspaces=args.workspaces))
        finally:
            if postgres is not None:
                postgres.stop()
    limits = "without" if args.no_rate_limits else "with"
    where = (f" across {args.workspaces} workspaces installed through OAuth"
             if args.workspaces else " in one workspace (a bot token)")
    print(f"{args.threads} threads x 4 deliveries at once{where}; model reply"
          f" {args.model_seconds:g} s; loopback Slack {limits} Slack's rate tiers;"
          f" {args.half_open} half-open connections held; ack ms over the answered"
          " deliveries")
    print_table(results)
    return 0 if all(result.ok for result in results) else 1


def _postgres(directory: Path) -> PostgresForTests:
    directory.mkdir()
    return PostgresForTests(directory)


def burst_run(replicas: int, database: str, url: str | None, threads: int,
              model_seconds: float, home: Path, *, rate_limits: bool = True,
              half_open: int = 0, workspaces: int = 0) -> BurstResult:
    """One burst at ``replicas`` fresh ``thoth serve`` processes, then stop them."""
    with FakeSlack(rate_limits=rate_limits) as slack, FakeAnthropic() as model:
        places = _places(slack, workspaces)
        slack.add_user("U1", "dana")
        model.push(*[api.text("A considered answer.", delay_s=model_seconds)
                     for _ in range(threads)])
        ports = [_free_port() for _ in range(replicas)] if workspaces else [0] * replicas
        installs = AppInstalls(
            slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
            redirect_uris=tuple(f"http://127.0.0.1:{port}/slack/oauth_redirect"
                                for port in ports)) if workspaces else None
        environment = _environment(slack.url, model.url, url, installs=bool(workspaces))
        if url is not None:
            _init(home / "init", environment)  # migrations once, before the replicas start
        servers = [Replica(home / f"replica{n}", {
            **environment, **({"CONSOLE_URL": f"http://127.0.0.1:{port}"} if workspaces
                              else {})}, port) for n, port in enumerate(ports)]
        try:
            addresses = [server.url() for server in servers]
            if installs is not None:
                base = addresses[0].rsplit("/slack/events", 1)[0]
                for place in places:
                    if install_through(base, installs,
                                       Install(place.team, f"Team {place.team}")) != 200:
                        raise SystemExit(f"installing into {place.team} failed")
            with _held_half_open(addresses[0], half_open):
                started, latencies, failures, statuses = _burst(addresses, threads, places)
            replies, finished = _wait_for_replies(slack, threads, places,
                                                  timeout_s=60 + 2 * threads + model_seconds)
        finally:
            exit_codes = [server.stop() for server in servers]
        for server, code in zip(servers, exit_codes, strict=True):
            if code != 0:
                print(f"a replica exited with {code}; its log ends:\n"
                      f"{server.log_path.read_text()[-2000:]}", file=sys.stderr)
        return BurstResult(
            replicas=replicas, database=database, deliveries=len(statuses),
            latencies=sorted(latencies), connection_errors=failures,
            not_ok=sum(1 for status in statuses if status not in (0, 200)),
            wall_s=finished - started, replies=replies, model_calls=len(model.requests),
            exit_codes=exit_codes, expected_threads=threads,
            refused=slack.rate_limits.refused if rate_limits else 0,
            early=len(slack.rate_limits.early) if rate_limits else 0,
        )


class Place(NamedTuple):
    """Where a workspace's threads go, and who Thoth is there (the loopback names each
    install's bot after its workspace)."""

    team: str
    channel: str
    bot: str


def _places(slack: FakeSlack, workspaces: int) -> list[Place]:
    """The workspaces the threads go to: one, T1's C1, with a bot token; or ``workspaces``
    installed through OAuth."""
    if not workspaces:
        slack.add_channel(CHANNEL, "general")
        return [Place("T1", CHANNEL, "UBOT")]
    places = [Place(f"T{n + 1}", f"C{n + 1}", f"UBOTT{n + 1}") for n in range(workspaces)]
    for place in places:
        slack.add_channel(place.channel, f"general-{place.team}", context_team_id=place.team)
    return places


def _free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


def _environment(slack_url: str, model_url: str, database_url: str | None, *,
                 installs: bool = False) -> dict[str, str]:
    environment = {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_", "THOTH_", "DATABASE_",
                                "CONSOLE_"))},
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack_url,
        "ANTHROPIC_API_KEY": "sk-ant-bench",
        "ANTHROPIC_BASE_URL": model_url,
        # The bench measures Slack, not spend: fifty turns at list prices pass the default
        # day's cap ($5), and a capped turn is not an answer.
        "DAILY_COST_CAP_USD": "1000",
        "HF_HUB_OFFLINE": "1",
    }
    if installs:
        environment |= {"SLACK_TOKEN_KEYS": TOKEN_KEY, "SLACK_CLIENT_ID": CLIENT_ID,
                        "SLACK_CLIENT_SECRET": CLIENT_SECRET}
    else:
        environment["SLACK_BOT_TOKEN"] = "xoxb-bench"
    if database_url is not None:
        environment["DATABASE_URL"] = database_url
    return environment


def _init(home: Path, environment: dict[str, str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    made = subprocess.run([sys.executable, "-m", "bridge", "init"], cwd=home,
                          env={**environment, "THOTH_HOME": str(home)},
                          capture_output=True, text=True, timeout=120, check=False)
    if made.returncode != 0:
        raise SystemExit(f"thoth init failed: {made.stderr.strip()[-2000:]}")


def _deliveries(threads: int, replicas: int, places: list[Place]) -> list[Delivery]:
    """Per thread, the mention and its ``message`` event, each sent to one replica and
    retried on the next; thread i in workspace i mod len(places)."""
    deliveries: list[Delivery] = []
    now = int(time.time())
    for number in range(threads):
        team, channel, bot = places[number % len(places)]
        ts = f"{now}.{number:06d}"
        text = f"<@{bot}> question {number}"
        mention = {"type": "app_mention", "user": "U1", "text": text, "ts": ts,
                   "channel": channel, "team": team, "event_ts": ts}
        message = {**mention, "type": "message", "channel_type": "channel"}
        for kind, (letter, event) in enumerate((("M", mention), ("S", message))):
            body = json.dumps({
                "type": "event_callback", "team_id": team, "api_app_id": "A1",
                "event_id": f"Ev{letter}{number:04d}", "event_time": now, "event": event,
                "authorizations": [{"enterprise_id": None, "team_id": team, "user_id": bot,
                                    "is_bot": True, "is_enterprise_install": False}]})
            first = (2 * number + kind) % replicas
            deliveries.append(Delivery(body, retry=False, replica=first))
            deliveries.append(Delivery(body, retry=True, replica=(first + 1) % replicas))
    return deliveries


@contextmanager
def _held_half_open(address: str, count: int) -> Iterator[None]:
    """``count`` connections that sent part of a request's headers, held until the end."""
    parts = urlsplit(address)
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection((parts.hostname or "", parts.port or 0), timeout=5)
            sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: slack\r\nX-Slow: 1\r\n")
            held.append(sock)
        yield
    finally:
        for sock in held:
            sock.close()


def _burst(addresses: list[str], threads: int, places: list[Place],
           ) -> tuple[float, list[float], int, list[int]]:
    """Every delivery at once; (when the first was sent, ack latencies, connection
    errors, statuses with 0 for a connection error)."""
    verifier = SignatureVerifier(SECRET)
    deliveries = _deliveries(threads, len(addresses), places)
    start = threading.Barrier(len(deliveries))
    began: list[float] = []

    def deliver(delivery: Delivery) -> tuple[float | None, int]:
        parts = urlsplit(addresses[delivery.replica])
        moment = str(int(time.time()))
        signature = verifier.generate_signature(timestamp=moment, body=delivery.body) or ""
        headers = {"content-type": "application/json", "x-slack-request-timestamp": moment,
                   "x-slack-signature": signature}
        if delivery.retry:
            headers |= {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
        start.wait()
        sent = time.monotonic()
        began.append(sent)
        try:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
            connection.request("POST", parts.path, body=delivery.body.encode(), headers=headers)
            status = connection.getresponse().status
            connection.close()
        except OSError:
            return None, 0
        return time.monotonic() - sent, status

    with ThreadPoolExecutor(max_workers=len(deliveries)) as pool:
        results = list(pool.map(deliver, deliveries))
    latencies = [latency for latency, _ in results if latency is not None]
    return (min(began), latencies, len(results) - len(latencies),
            [status for _, status in results])


def _wait_for_replies(slack: FakeSlack, threads: int, places: list[Place],
                      timeout_s: float) -> tuple[list[int], float]:
    """Replies per thread, and when the last reply was finished (monotonic, as the
    loopback Slack records its calls)."""
    channels = {place.channel for place in places}
    deadline = time.monotonic() + timeout_s
    while True:
        counts = _reply_counts(slack, channels)
        done = (len(counts) == threads and min(counts) >= 1
                and len(_finishing(slack, channels)) >= threads)
        if done or time.monotonic() > deadline:
            time.sleep(1.0)  # room for a wrong second answer to show up
            counts = _reply_counts(slack, channels)
            finishing = _finishing(slack, channels)
            last = max(finishing) if finishing else time.monotonic()
            return counts + [0] * (threads - len(counts)), last
        time.sleep(0.05)


def _finishing(slack: FakeSlack, channels: set[str]) -> list[float]:
    return [call.received_at for call in slack.calls()
            if call.method in REPLY_FINISHED and call.args.get("channel") in channels]


def _reply_counts(slack: FakeSlack, channels: set[str]) -> list[int]:
    per_thread: dict[tuple[str, str], int] = {}
    for channel in channels:
        for message in slack.messages(channel):
            if str(message.get("user") or "").startswith("UBOT") and message.get("thread_ts"):
                key = (channel, message["thread_ts"])
                per_thread[key] = per_thread.get(key, 0) + 1
    return list(per_thread.values())


def _percentile(ordered: list[float], percent: float) -> float:
    index = min(len(ordered) - 1, max(0, round(percent / 100 * len(ordered)) - 1))
    return ordered[index]


def print_table(results: Sequence[BurstResult]) -> None:
    print(f"{'replicas':>8} {'database':<10} {'deliveries':>10} {'conn err':>8} {'non-200':>7}"
          f" {'ack p50':>8} {'ack p99':>8} {'ack max':>8} {'answered':>8} {'wall s':>7}"
          f" {'turns/s':>8} {'replies/thread':>14} {'model calls':>11} {'429s':>5}"
          f" {'in a wait':>9}")
    for result in results:
        ordered = result.latencies or [float("nan")]
        print(f"{result.replicas:>8} {result.database:<10} {result.deliveries:>10}"
              f" {result.connection_errors:>8} {result.not_ok:>7}"
              f" {statistics.median(ordered) * 1000:>8.1f}"
              f" {_percentile(ordered, 99) * 1000:>8.1f} {ordered[-1] * 1000:>8.1f}"
              f" {result.answered:>8} {result.wall_s:>7.2f}"
              f" {result.answered / result.wall_s:>8.2f}"
              f" {str(sorted(set(result.replies))):>14} {result.model_calls:>11}"
              f" {result.refused:>5} {result.early:>9}")
    print("turns/s: messages answered / (last reply finished - first delivery sent);"
          " each thread must have exactly 1 reply and one model call; 429s: Slack's"
          " refusals; in a wait: calls of a method inside a Retry-After Slack had given"
          " (target 0)")


if __name__ == "__main__":
    raise SystemExit(main())
