"""Replicas over Socket Mode: each opens its own connection, and Slack spreads an app's
deliveries over them, a retry as likely to reach another connection as the first try.
Two bridges (as two ``thoth serve`` would be) share one PostgreSQL; the real Bolt
``AsyncSocketModeHandler`` on each, against one loopback Socket Mode server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.settings import Settings
from bridge.slack.bolt_app import build_bridge
from bridge.slack.runner import TurnRunner
from bridge.slack.socket_mode import SocketModeConnection
from tests.fakes import HashingEmbedder
from tests.postgres import PostgresForTests
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_socket import PROXY_VARIABLES, FakeSocketMode
from tests.waiting import wait_until

CHANNEL = "C1"
APP_TOKEN = "xapp-test"
REPLICAS = 2


@dataclass
class Replica:
    thoth: Thoth
    runner: TurnRunner
    connection: SocketModeConnection


@dataclass
class SocketReplicas:
    slack: FakeSlack
    socket: FakeSocketMode
    model: FakeAnthropic
    replicas: list[Replica]

    def replies(self, thread_ts: str) -> list[str]:
        return [str(message.get("text") or "")
                for message in self.slack.messages(CHANNEL, thread_ts)
                if message.get("user") == "UBOT"]


@pytest.fixture
def socket_replicas(
    model_settings: Settings,
    fake_anthropic: FakeAnthropic,
    hashing_embedder: HashingEmbedder,
    postgres: PostgresForTests,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[SocketReplicas]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    url = postgres.fresh_database()
    with FakeSocketMode() as socket, FakeSlack() as slack:
        slack.socket_url = socket.url
        slack.add_user("U1", "dana")
        slack.add_channel(CHANNEL, "general")
        replicas: list[Replica] = []
        try:
            for number in range(REPLICAS):
                settings = model_settings.model_copy(update={
                    "slack_bot_token": SecretStr("xoxb-test"),
                    "slack_app_token": SecretStr(APP_TOKEN),
                    "slack_api_url": slack.url,
                    "database_url": SecretStr(url),
                    "thoth_home": tmp_path / f"replica-{number}",
                })
                thoth = build(settings, embedder=hashing_embedder)
                runner = TurnRunner()
                runner.start()
                bridge = runner.call(build_bridge(thoth, runner))
                connection = SocketModeConnection(bridge.app, APP_TOKEN)
                replicas.append(Replica(thoth, runner, connection))
                connection.start()
                socket.wait_for_connection(count=number + 1)
            yield SocketReplicas(slack, socket, fake_anthropic, replicas)
        finally:
            for replica in replicas:
                try:
                    replica.connection.stop()
                finally:
                    replica.runner.shutdown(30, last=replica.thoth.drain())
                    replica.thoth.close()


def test_each_message_is_answered_once_whichever_connections_its_deliveries_reach(
    socket_replicas: SocketReplicas,
) -> None:
    threads = [f"1700000{n:03d}.000100" for n in range(6)]
    envelopes = []
    for number, ts in enumerate(threads):
        first, other = number % REPLICAS, (number + 1) % REPLICAS
        mention = {"type": "app_mention", "user": "U1", "text": f"<@UBOT> question {number}",
                   "ts": ts, "channel": CHANNEL, "team": "T1", "event_ts": ts}
        # The mention on one connection; its retry and the same message's `message`
        # event on the other.
        envelopes.append(socket_replicas.socket.send_event(
            mention, event_id=f"EvM{number}", on=first))
        envelopes.append(socket_replicas.socket.send_event(
            mention, event_id=f"EvM{number}", retry_attempt=1, retry_reason="timeout", on=other))
        envelopes.append(socket_replicas.socket.send_event(
            {**mention, "type": "message", "channel_type": "channel"},
            event_id=f"EvG{number}", on=other))
    acks = [socket_replicas.socket.wait_for_ack(envelope) for envelope in envelopes]
    # Each replica acknowledged what reached its own connection.
    assert [ack.connection for ack in acks] == [
        replica for number in range(len(threads))
        for replica in (number % REPLICAS, (number + 1) % REPLICAS, (number + 1) % REPLICAS)
    ]
    wait_until(lambda: all(socket_replicas.replies(ts) for ts in threads), timeout_s=60)
    wait_until(lambda: _count(socket_replicas, "slack_inbox") == 0, timeout_s=30)
    assert {ts: len(socket_replicas.replies(ts)) for ts in threads} == dict.fromkeys(threads, 1)
    assert len(socket_replicas.model.requests) == len(threads)
    # An episode is written after its reply is shown, in the background: waited for (a
    # loaded CI machine saw five of six a moment after the last reply), then never more.
    wait_until(lambda: _count(socket_replicas, "episodes") >= len(threads), timeout_s=30)
    assert _count(socket_replicas, "episodes") == len(threads)


def _count(replicas: SocketReplicas, table: str) -> int:
    with replicas.replicas[0].thoth.db.read() as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
