"""Issue 55, fault 1: PostgreSQL goes away in the middle of a burst on two `thoth serve`
replicas and a worker (real processes, a real server of their own, stopped with
``pg_ctl -m fast``), and comes back. Every delivery acked meanwhile is answered once after
it returns, every turn is in the transcript once, ``/health`` says degraded in between
and ok after, and each replica listens again for the others' Slack waits."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.replicas_harness import LoadBalancer, cluster, mention, turns
from tests.postgres import PostgresForTests, count
from tests.servers.slack_api import FakeSlack
from tests.waiting import wait_until

CHANNELS = ("C1", "C2")
THREADS = 8
DOWN_S = 6.0


@pytest.fixture
def own_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresForTests]:
    """A server of this test's own: stopping the one every test shares would fail theirs."""
    server = PostgresForTests(tmp_path_factory.mktemp("own-postgres"))
    try:
        yield server
    finally:
        server.stop()


def health(address: str) -> str:
    base = address.removesuffix("/slack/events")
    with urllib.request.urlopen(f"{base}/health", timeout=10) as response:
        assert response.status == 200  # degraded is still 200: the balancer keeps it
        return response.read().decode()


def listeners(url: str) -> int:
    return count(url, "SELECT count(*) FROM pg_stat_activity"
                      " WHERE query LIKE 'LISTEN thoth_slack_holds%'")


def test_a_database_away_mid_burst_loses_and_doubles_nothing(
    tmp_path: Path, own_postgres: PostgresForTests
) -> None:
    url = own_postgres.fresh_database()
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        for channel in CHANNELS:
            slack.add_channel(channel, f"team-{channel.lower()}")
        # Leases long enough to outlast a renewal queued behind the burst's writes when the
        # database returns (the pool's wait is 10 s); the default is 30 s.
        with cluster(tmp_path, url, slack, replicas=2, workers=1, lease_s=12) as (
                replicas, workers):
            balancer = LoadBalancer([r.first_line().strip().split()[-1] for r in replicas])
            assert "Thoth worker on postgresql://" in workers[0].first_line()
            wait_until(lambda: listeners(url) == 2, 30)
            threads = [(CHANNELS[n % 2], f"1700200{n:03d}.000100") for n in range(THREADS)]
            sent: dict[str, list[str]] = {root: [] for _, root in threads}

            def send(number: int, channel: str, root: str, round_number: int) -> None:
                ts = root if round_number == 0 else f"{root[:-3]}{round_number + 1:03d}"
                text = f"note {number}-{round_number}"
                sent[root].append(text)
                balancer.send(mention(f"Ev{number}x{round_number}", channel, text, ts, root),
                              first=number + round_number)

            for number, (channel, root) in enumerate(threads[: THREADS // 2]):
                send(number, channel, root, 0)
            own_postgres.go_down()
            went_down = time.monotonic()
            # Acked while the database is away: only the replicas' memory holds these.
            for number, (channel, root) in enumerate(threads):
                send(number, channel, root, 0 if number >= THREADS // 2 else 1)
            wait_until(lambda: all(health(a).startswith("degraded: postgres")
                                   for a in balancer.addresses), 20)
            time.sleep(max(0.0, DOWN_S - (time.monotonic() - went_down)))
            own_postgres.come_back()
            came_back = time.monotonic()

            try:
                wait_until(lambda: all(len(turns(url, root)) == len(sent[root])
                                       for _, root in threads), 60)
            except AssertionError:
                logs = "\n".join("".join(r.errors)[-3000:] for r in replicas)
                raise AssertionError(f"turns: { {r: turns(url, r) for _, r in threads} }\n"
                                     f"replicas said:\n{logs}") from None
            answered_in_s = time.monotonic() - came_back
            for channel, root in threads:
                assert turns(url, root) == sent[root]
                replies = [m for m in slack.messages(channel, root) if m.get("user") == "UBOT"]
                assert len(replies) == len(sent[root]), [m.get("text") for m in replies]
            wait_until(lambda: count(url, "SELECT count(*) FROM slack_inbox") == 0, 30)
            assert all(health(address) == "ok" for address in balancer.addresses)
            # Each replica listens again for the others' Slack waits.
            wait_until(lambda: listeners(url) == 2, 10)
            assert answered_in_s < 30, answered_in_s
            said = "".join("".join(r.errors) for r in replicas)
            # A line when it goes and one when it is back, per replica: not a line a call.
            # (A query already running as the server stops can still succeed, so a
            # replica may say it twice over.)
            failing, back = said.count("postgres is failing"), said.count("postgres is back")
            assert 2 <= failing <= 4 and back == failing, said[-3000:]
            assert "Traceback" not in said, said[-3000:]
