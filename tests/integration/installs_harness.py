"""Thoth installed into many workspaces, served over real HTTP (bridge/slack_api/installs/): the
real Bolt app behind Thoth's HTTP server, a loopback Slack that issues each workspace its
own bot token through Slack's OAuth v2 flow, and a browser's steps through that flow."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr
from slack_sdk.signature import SignatureVerifier

from bridge.app import Thoth, build
from bridge.settings import Settings
from bridge.slack.bolt_app import SlackTransport, build_bridge
from bridge.slack.http_server import SlackHttpServer, install_routes
from bridge.slack.runner import TurnRunner
from bridge.slack_api.installs.installations import Installations, installations_of
from layers.shared.token_cipher import TokenCipher
from tests.fakes import HashingEmbedder
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_install import AppInstalls, Browser, Install, to_slack_and_back

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CLIENT_ID = "111.222"
CLIENT_SECRET = "app-client-secret"
KEY = TokenCipher.new_key()


@dataclass
class Served:
    thoth: Thoth
    bridge: SlackTransport
    slack: FakeSlack
    installs: AppInstalls
    model: FakeAnthropic
    base: str
    counter: int = 0
    last_browser: Browser = field(default_factory=Browser)

    @property
    def installations(self) -> Installations:
        return installations_of(self.thoth.settings, self.thoth.db)

    def install(self, install: Install, browser: Browser | None = None) -> tuple[int, str]:
        """Add to Slack, as a browser does it: the install page, Slack's authorize page,
        then Slack's redirect back to Thoth."""
        back = self.to_slack_and_back(install, browser or Browser())
        status, page, _ = (browser or self.last_browser).get(back)
        return status, page

    def to_slack_and_back(self, install: Install, browser: Browser) -> str:
        """Where Slack sends the browser back to, after the install page and Slack's own."""
        self.last_browser = browser
        return to_slack_and_back(self.base, self.installs, install, browser)

    def event(self, team: str, event: dict[str, Any], *, enterprise: str | None = None,
              org_wide: bool = False) -> int:
        self.counter += 1
        body = {
            "token": "verification_token", "team_id": team, "enterprise_id": enterprise,
            "api_app_id": "A1", "event": {"event_ts": f"{time.time():.6f}", **event},
            "type": "event_callback", "event_id": f"Ev{team}{self.counter:04d}",
            "event_time": int(time.time()),
            "authorizations": [{"enterprise_id": enterprise, "team_id": team,
                                "user_id": f"UBOT{enterprise if org_wide else team}",
                                "is_bot": True, "is_enterprise_install": org_wide}],
            "is_ext_shared_channel": False,
        }
        text = json.dumps(body)
        moment = str(int(time.time()))
        request = urllib.request.Request(
            self.base + "/slack/events", data=text.encode(), method="POST",
            headers={"content-type": "application/json",
                     "x-slack-request-timestamp": moment,
                     "x-slack-signature": SignatureVerifier(SECRET).generate_signature(
                         timestamp=moment, body=text)})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def mention(self, team: str, channel: str, text: str, ts: str, *, user: str,
                bot: str | None = None, **kw: Any) -> int:
        return self.event(team, {"type": "app_mention", "user": user, "team": team,
                                 "text": f"<@{bot or 'UBOT' + team}> {text}", "ts": ts,
                                 "channel": channel}, **kw)

    def answer_in(self, channel: str, ts: str) -> list[Any]:
        """The calls that answered the thread (the stream's start), once there are any."""
        return [c for c in self.slack.calls("chat.startStream")
                if c.args.get("channel") == channel and c.args.get("thread_ts") == ts]


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


@contextmanager
def serving_installs(model_settings: Settings, fake_anthropic: FakeAnthropic,
                     embedder: HashingEmbedder, **settings_update: Any) -> Iterator[Served]:
    """``settings_update``: settings of the test's own, over the harness's."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with FakeSlack() as slack:
        installs = AppInstalls(slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                               redirect_uris=(base + "/slack/oauth_redirect",))
        for team, channel, person in (("T1", "C1", "U1"), ("T2", "C2", "U2"),
                                      ("T3", "C3", "U3")):
            slack.add_user(person, f"person-{team}")
            slack.add_channel(channel, f"general-{team}", context_team_id=team)
        slack.add_channel("C3", "org-wide", context_team_id="T3", enterprise_id="E1")
        settings = model_settings.model_copy(update={
            "slack_bot_token": None, "slack_signing_secret": SecretStr(SECRET),
            "slack_api_url": slack.url, "slack_client_id": CLIENT_ID,
            "slack_client_secret": SecretStr(CLIENT_SECRET), "console_url": base,
            "slack_token_keys": SecretStr(KEY), **settings_update,
        })
        thoth = build(settings, embedder=embedder)
        runner = TurnRunner()
        runner.start()
        bridge = runner.call(build_bridge(thoth, runner))
        server = SlackHttpServer(bridge.app, signing_secret=SECRET, host="127.0.0.1",
                                 port=port, also=install_routes(bridge.app))
        server.start()
        try:
            yield Served(thoth, bridge, slack, installs, fake_anthropic, base)
        finally:
            server.stop()
            runner.shutdown(30, last=thoth.drain())
            thoth.close()




def tokens_of(served: Served) -> dict[str, str]:
    """Each install's bot token, by its workspace (or org, for an org-wide install)."""
    return {bot.install.team_id or str(bot.install.enterprise_id): token
            for token, bot in served.installs.bots.items()}
