"""The Slack bridge over Socket Mode: the real Bolt ``AsyncSocketModeHandler`` (the
SDK's aiohttp WebSocket client), as ``thoth serve`` runs it, against a loopback Socket
Mode server, the real async WebClient against the loopback Slack Web API, the real
anthropic SDK against the loopback Messages API."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.messages import RECALL_ACK
from bridge.settings import Settings
from bridge.slack.bolt_app import SlackTransport, build_bridge
from bridge.slack.runner import TurnRunner
from bridge.slack.socket_mode import SocketModeConnection
from layers.shared.errors import ConfigurationError
from tests.fakes import HashingEmbedder
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_socket import PROXY_VARIABLES, FakeSocketMode
from tests.waiting import wait_until

CHANNEL = "C1"
APP_TOKEN = "xapp-test"
# Slack retries an envelope nobody acknowledged within 3 s; ours must come back far sooner.
ACK_BUDGET_S = 1.0


@dataclass
class SocketHarness:
    thoth: Thoth
    bridge: SlackTransport
    slack: FakeSlack
    socket: FakeSocketMode
    model: FakeAnthropic
    connection: SocketModeConnection

    def mention(self, text: str, ts: str) -> str:
        return self.socket.send_event({
            "type": "app_mention", "user": "U1", "text": f"<@UBOT> {text}", "ts": ts,
            "channel": CHANNEL, "team": "T1", "event_ts": ts,
        })

    def command(self, name: str, text: str, *, user: str = "U1") -> str:
        return self.socket.send_command({
            "command": name, "text": text, "channel_id": CHANNEL, "channel_name": "general",
            "user_id": user, "user_name": "dana", "response_url": "http://127.0.0.1:9/",
            "trigger_id": "1.2.3", "is_enterprise_install": "false",
        })

    def finished_reply(self, thread_ts: str) -> str:
        """The agent's finished reply in the thread (a stopped stream, or a posted message)."""
        for message in self.slack.messages(CHANNEL, thread_ts):
            if message.get("user") != "UBOT":
                continue
            stream = self.slack.stream(CHANNEL, message["ts"])
            if (stream is None or stream["state"] == "stopped") and message.get("text"):
                return str(message["text"])
        return ""


@pytest.fixture
def socket_harness(
    model_settings: Settings,
    fake_anthropic: FakeAnthropic,
    hashing_embedder: HashingEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[SocketHarness]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with FakeSocketMode() as socket, FakeSlack() as slack:
        slack.socket_url = socket.url
        slack.add_user("U1", "dana")
        slack.add_channel(CHANNEL, "general")
        settings = model_settings.model_copy(
            update={
                "slack_bot_token": SecretStr("xoxb-test"),
                "slack_app_token": SecretStr(APP_TOKEN),
                "slack_api_url": slack.url,
            }
        )
        thoth = build(settings, embedder=hashing_embedder)
        runner = TurnRunner()
        runner.start()
        bridge = runner.call(build_bridge(thoth, runner))
        # The handler asks apps.connections.open for the WebSocket URL through the app's
        # client (the bot token's base URL, with the app token).
        connection = SocketModeConnection(bridge.app, APP_TOKEN)
        try:
            connection.start()
            socket.wait_for_connection()
            yield SocketHarness(thoth, bridge, slack, socket, fake_anthropic, connection)
        finally:
            try:
                connection.stop()
            finally:
                runner.shutdown(30, last=thoth.drain())
                thoth.close()


def test_the_handler_opens_its_socket_through_the_configured_web_api(
    socket_harness: SocketHarness,
) -> None:
    # Asked twice: once to check the token (a refusal is said at once), once by the
    # handler for the URL it connects to.
    calls = socket_harness.slack.calls("apps.connections.open")
    assert [call.token for call in calls] == [APP_TOKEN, APP_TOKEN]
    assert socket_harness.socket.paths == [
        f"/link/?ticket={socket_harness.socket.ticket}&app_id=A1"
    ]
    assert socket_harness.connection.is_connected()


def test_a_mention_is_acked_at_once_and_answered_in_its_thread(
    socket_harness: SocketHarness,
) -> None:
    h = socket_harness
    ts = "1700000000.000100"
    h.model.push(api.text("Deploys are on Fridays."))
    envelope_id = h.mention("when do we deploy?", ts)
    ack = h.socket.wait_for_ack(envelope_id, timeout_s=3)
    assert ack.elapsed < ACK_BUDGET_S
    assert ack.payload is None  # events take a bare {"envelope_id": ...}
    assert wait_until(lambda: h.finished_reply(ts)) == "Deploys are on Fridays."
    (request,) = h.model.requests
    assert request.conversation()[-1]["content"] == "when do we deploy?"
    assert len(h.socket.acks) == 1


def test_recall_is_acked_while_a_slow_turn_runs(socket_harness: SocketHarness) -> None:
    h = socket_harness
    ts = "1700000200.000100"
    h.model.push(api.text("Noted.", delay_s=3.0))
    mention_id = h.mention("the staging database migrates on Tuesdays", ts)
    assert h.socket.wait_for_ack(mention_id, timeout_s=3).elapsed < ACK_BUDGET_S
    h.model.wait_for_requests(1)  # the slow turn is now waiting on the model

    command_id = h.command("/recall", "staging database")
    ack = h.socket.wait_for_ack(command_id, timeout_s=3)
    assert ack.elapsed < ACK_BUDGET_S
    assert ack.payload == {"text": RECALL_ACK}  # shown to the user, as in HTTP mode
    assert h.finished_reply(ts) == ""  # the acks did not wait for the turn

    ephemeral = wait_until(lambda: h.slack.ephemerals(CHANNEL), 30)
    assert ephemeral[0]["user"] == "U1"
    assert ephemeral[0]["text"]
    assert wait_until(lambda: h.finished_reply(ts), 30) == "Noted."


def test_a_refused_app_token_is_said_at_once(socket_harness: SocketHarness) -> None:
    h = socket_harness
    h.slack.app_token = APP_TOKEN  # Slack knows one app token, not the one below
    connection = SocketModeConnection(h.bridge.app, "xapp-not-this-app")
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match=r"refused SLACK_APP_TOKEN \(invalid_auth\)"):
        connection.start()
    # The SDK's own connect would log the refusal and retry it every few seconds, forever.
    assert time.monotonic() - started < 5.0
    assert h.socket.paths == [f"/link/?ticket={h.socket.ticket}&app_id=A1"]  # no new socket


def test_envelopes_are_acked_while_the_turns_loop_is_blocked(
    socket_harness: SocketHarness,
) -> None:
    """Acks and turns run on different loops: even a turn that wrongly blocks its loop
    delays no ack (Slack redelivers what is not acked within 3 s)."""
    h = socket_harness

    blocking, released = threading.Event(), threading.Event()

    async def blocking_turn() -> None:
        blocking.set()
        released.wait(10)  # a forgotten to_thread: the turns' loop stands still

    h.bridge.runner.submit(blocking_turn())
    assert blocking.wait(5)
    try:
        envelope_id = h.command("/recall", "anything")
        ack = h.socket.wait_for_ack(envelope_id, timeout_s=3)
    finally:
        released.set()
    assert ack.elapsed < ACK_BUDGET_S
