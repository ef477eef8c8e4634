"""The Slack bridge under test: signed requests over real HTTP to the real Bolt app,
the real async WebClient against the loopback Slack Web API, the real anthropic SDK against
the loopback Messages API. The ``harness`` fixture is in ``conftest.py``."""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import SecretStr
from slack_sdk.signature import SignatureVerifier

from bridge.app import Thoth, build
from bridge.settings import Settings
from bridge.slack.bolt_app import SlackTransport, build_bridge
from bridge.slack.http_server import SlackHttpServer
from bridge.slack.runner import TurnRunner
from tests.fakes import HashingEmbedder
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.waiting import wait_until

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C1"
FOUNDER = "UFOUNDER"


@dataclass
class Harness:
    thoth: Thoth
    bridge: SlackTransport
    slack: FakeSlack
    model: FakeAnthropic
    url: str
    counter: int = 0

    def post(
        self,
        body: str,
        *,
        content_type: str = "application/json",
        timestamp: int | None = None,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str, float]:
        moment = str(timestamp if timestamp is not None else int(time.time()))
        signed = signature or SignatureVerifier(SECRET).generate_signature(
            timestamp=moment, body=body
        )
        request = urllib.request.Request(
            self.url,
            data=body.encode(),
            method="POST",
            headers={
                "content-type": content_type,
                "x-slack-request-timestamp": moment,
                "x-slack-signature": signed,
                **(headers or {}),
            },
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode(), time.monotonic() - started
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), time.monotonic() - started

    def event(
        self, event: dict[str, Any], *, event_id: str | None = None,
        authorizations: list[dict[str, Any]] | None = None, **kw: Any,
    ) -> int:
        """An Events API delivery, enveloped as Slack sends it (bolt-python's scenario tests);
        ``authorizations`` replaces the bot's own."""
        self.counter += 1
        body = {
            "token": "verification_token",
            "team_id": "T1",
            "api_app_id": "A1",
            "event": {"event_ts": event.get("ts") or f"{time.time():.6f}", **event},
            "type": "event_callback",
            "event_id": event_id or f"Ev{self.counter:04d}",
            "event_time": int(time.time()),
            "authorizations": authorizations or [
                {"enterprise_id": None, "team_id": "T1", "user_id": "UBOT", "is_bot": True,
                 "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
            "event_context": f"4-eyJldCI6ImFwcF9tZW50aW9uIn0-{self.counter}",
        }
        return self.post(json.dumps(body), **kw)[0]

    def mention(self, text: str, ts: str, *, thread_ts: str | None = None, **kw: Any) -> int:
        event = {"client_msg_id": f"9cbd4c5b-7ddf-4ede-b479-{self.counter:012d}",
                 "type": "app_mention", "user": "U1", "text": f"<@UBOT> {text}", "ts": ts,
                 "team": "T1", "channel": CHANNEL}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return self.event(event, **kw)

    def command(
        self, name: str, text: str, *, user: str = "U1", channel: str = CHANNEL,
        channel_name: str = "general",
    ) -> tuple[int, str, float]:
        form = {"token": "legacy", "team_id": "T1", "team_domain": "test",
                "channel_id": channel, "channel_name": channel_name, "user_id": user,
                "user_name": "dana", "command": name, "text": text, "api_app_id": "A1",
                "is_enterprise_install": "false",
                "response_url": self.slack.response_url(), "trigger_id": "1.2.3"}
        return self.post(
            urllib.parse.urlencode(form), content_type="application/x-www-form-urlencoded"
        )

    def reaction(self, name: str, ts: str, *, added: bool = True, user: str = "U1") -> int:
        return self.event(
            {"type": "reaction_added" if added else "reaction_removed", "user": user,
             "reaction": name, "item": {"type": "message", "channel": CHANNEL, "ts": ts},
             "item_user": "UBOT", "event_ts": f"{time.time():.6f}"}
        )

    def replies_in(self, thread_ts: str) -> list[dict[str, Any]]:
        return [m for m in self.slack.messages(CHANNEL, thread_ts) if m.get("user") == "UBOT"]

    def answered(self, thread_ts: str) -> tuple[str, str]:
        """The first reply in the thread and its stored episode, once both exist."""
        replies = self.bridge.stores.replies
        reply_ts = str(wait_until(lambda: streamed_text(self, thread_ts)) and
                       self.replies_in(thread_ts)[0]["ts"])

        def episode() -> str | None:
            record = replies.find(CHANNEL, reply_ts)
            found = record.episode_id if record else None
            return found if found and self.thoth.episodic.store.get(found) else None

        return reply_ts, str(wait_until(episode))


@contextmanager
def running_bridge(
    model_settings: Settings, fake_anthropic: FakeAnthropic, embedder: HashingEmbedder,
    **settings_update: Any,
) -> Iterator[Harness]:
    """``settings_update``: settings of the test's own, over the harness's."""
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        slack.add_user("U2", "ari")
        slack.add_user(FOUNDER, "fia")
        slack.add_channel(CHANNEL, "general")
        settings = model_settings.model_copy(
            update={
                "slack_bot_token": SecretStr("xoxb-test"),
                "slack_signing_secret": SecretStr(SECRET),
                "slack_api_url": slack.url,
                "founder_user_ids": [FOUNDER],
                **settings_update,
            }
        )
        with serving(settings, embedder) as (thoth, bridge, url):
            yield Harness(thoth, bridge, slack, fake_anthropic, url)


@contextmanager
def serving(settings: Settings, embedder: HashingEmbedder,
            ) -> Iterator[tuple[Thoth, SlackTransport, str]]:
    """One replica of the Slack bridge over HTTP: its app, its bridge and its URL (a
    second one on the same settings is a second replica behind the load balancer)."""
    thoth = build(settings, embedder=embedder)
    runner = TurnRunner()
    runner.start()
    bridge = runner.call(build_bridge(thoth, runner))
    server = SlackHttpServer(bridge.app, signing_secret=SECRET, host="127.0.0.1", port=0,
                             health=thoth.health)
    server.start()
    try:
        yield thoth, bridge, f"http://127.0.0.1:{server.port}/slack/events"
    finally:
        server.stop()
        runner.shutdown(30, last=thoth.drain())
        thoth.close()


def shown(message: dict[str, Any]) -> str:
    """What a person sees of a message: its markdown blocks if it has them, else its text."""
    markdown = [b["text"] for b in message.get("blocks") or [] if b.get("type") == "markdown"]
    return "".join(markdown) if markdown else str(message.get("text") or "")


def streamed_text(h: Harness, thread_ts: str) -> str:
    """The agent's finished reply in the thread (a stopped stream, or a posted message)."""
    for message in h.replies_in(thread_ts):
        stream = h.slack.stream(CHANNEL, message["ts"])
        if (stream is None or stream["state"] == "stopped") and shown(message):
            return shown(message)
    return ""


def failures_logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The records of this process that carry a traceback, but asyncio's: its "Task
    exception was never retrieved" for another test's HTTP client, garbage-collected
    while this test runs, is not about this test's requests (seen on CI: httpx's
    ``aclose`` on a loop an earlier test had closed)."""
    return [record for record in caplog.records if record.name != "asyncio"
            and (record.exc_info is not None or "Traceback" in record.getMessage())]
