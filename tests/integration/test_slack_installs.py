"""Thoth installed into many workspaces through Slack's OAuth v2 flow (bridge/slack/installs/),
driven over real HTTP: a browser's steps with urllib (the install page, Slack's authorize
page on the loopback Slack, the redirect back with Bolt's state cookie), signed events to
the real Bolt app, and the real async SDK client against the loopback Slack, which issues
each workspace its own bot token and refuses it outside that workspace."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import SecretStr
from slack_sdk.signature import SignatureVerifier

from bridge.app import Thoth, build
from bridge.settings import Settings
from bridge.slack.bolt_app import SlackTransport, build_bridge
from bridge.slack.http_server import SlackHttpServer, install_routes
from bridge.slack.installs.installations import Installations, installations_of
from bridge.slack.installs.token_cipher import TokenCipher
from bridge.slack.runner import TurnRunner
from bridge.slack.web import build_async_web_client
from tests.fakes import HashingEmbedder
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_install import (
    AppInstalls,
    Browser,
    Install,
    install_through,
    to_slack_and_back,
)
from tests.waiting import wait_until

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


def _free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


@contextmanager
def serving_installs(model_settings: Settings, fake_anthropic: FakeAnthropic,
                     embedder: HashingEmbedder) -> Iterator[Served]:
    port = _free_port()
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
            "slack_token_keys": SecretStr(KEY),
        })
        thoth = build(settings, embedder=embedder)
        runner = TurnRunner()
        runner.start()
        bridge = runner.call(build_bridge(thoth, build_async_web_client(settings), runner,
                                          installations_of(settings, thoth.db)))
        server = SlackHttpServer(bridge.app, signing_secret=SECRET, host="127.0.0.1",
                                 port=port, also=install_routes(bridge.app))
        server.start()
        try:
            yield Served(thoth, bridge, slack, installs, fake_anthropic, base)
        finally:
            server.stop()
            runner.shutdown(30, last=thoth.drain())
            thoth.close()


@pytest.fixture
def served(model_settings: Settings, fake_anthropic: FakeAnthropic,
           hashing_embedder: HashingEmbedder) -> Iterator[Served]:
    with serving_installs(model_settings, fake_anthropic, hashing_embedder) as running:
        yield running


def _tokens_of(served: Served) -> dict[str, str]:
    return {bot.install.team_id or str(bot.install.enterprise_id): token
            for token, bot in served.installs.bots.items()}


def test_two_workspaces_installed_each_answered_with_its_own_token_and_memory(
    served: Served,
) -> None:
    assert served.install(Install("T1", "One"))[0] == 200
    assert served.install(Install("T2", "Two"))[0] == 200
    assert sorted(i.team_id or "" for i in served.installations.listed()) == ["T1", "T2"]
    tokens = _tokens_of(served)
    # Sealed at rest: the database file holds neither token.
    raw = sqlite3.connect(served.thoth.settings.db_path).execute(
        "SELECT bot_token_sealed FROM slack_installations").fetchall()
    assert raw and not any(token in str(raw) for token in tokens.values())

    served.model.push(api.text("Noted: the code word is lanternfish."))
    assert served.mention("T1", "C1", "the launch code word is lanternfish", "1700003000.000100",
                          user="U1") == 200
    (started,) = wait_until(lambda: served.answer_in("C1", "1700003000.000100"))
    assert started.token == tokens["T1"]
    wait_until(lambda: served.thoth.episodic.store.count() == 1)

    served.model.push(api.text("I do not know a code word."))
    assert served.mention("T2", "C2", "what is the launch code word?", "1700003000.000200",
                          user="U2") == 200
    (started,) = wait_until(lambda: served.answer_in("C2", "1700003000.000200"))
    assert started.token == tokens["T2"]
    (asked,) = wait_until(lambda: [r for r in served.model.requests
                                   if "what is the launch code word" in json.dumps(r.body)])
    # What was said in the first workspace never reaches the second one's prompt.
    assert "lanternfish" not in json.dumps(asked.body)
    # Every call carried the token of the workspace whose channel it named.
    for call in served.slack.calls():
        channel = call.args.get("channel")
        if channel in ("C1", "C2"):
            assert call.token == tokens["T1" if channel == "C1" else "T2"], call.method


def test_an_uninstalled_workspace_is_refused_at_once_and_the_other_keeps_answering(
    served: Served,
) -> None:
    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    served.model.push(api.text("Kept."))
    served.mention("T1", "C1", "remember the freeze starts Friday", "1700003100.000100",
                   user="U1")
    wait_until(lambda: served.thoth.episodic.store.count() == 1)

    served.installs.uninstall("T1")
    assert served.event("T1", {"type": "app_uninstalled"}) == 200
    wait_until(lambda: [i.team_id for i in served.installations.listed()] == ["T2"])
    before = len(served.slack.calls())
    assert served.mention("T1", "C1", "are you there?", "1700003100.000200", user="U1") == 200

    served.model.push(api.text("Still here for Two."))
    served.mention("T2", "C2", "are you there?", "1700003100.000300", user="U2")
    wait_until(lambda: served.answer_in("C2", "1700003100.000300"))
    # Nothing was said, or asked of Slack, for the workspace that left.
    assert not any(c.args.get("channel") == "C1" for c in served.slack.calls()[before:])
    # Its memory stays until the operator exports or purges it.
    assert served.thoth.episodic.store.count() >= 1


def test_forged_replayed_and_cancelled_installs_store_nothing(served: Served) -> None:
    # Forged: a state Thoth never issued, from a browser that carries none.
    status, _, _ = Browser().get(served.base + "/slack/oauth_redirect?code=x&state=forged")
    assert status == 400
    # The state cookie of one browser, with a state Thoth never issued.
    browser = Browser()
    browser.get(served.base + "/slack/install")
    (cookie,) = browser.cookies
    browser.cookies[cookie] = "forged"
    assert browser.get(served.base + "/slack/oauth_redirect?code=x&state=forged")[0] == 401
    # Cancelled at Slack: the callback carries an error, no code.
    browser = Browser()
    back = served.to_slack_and_back(Install("T1", deny=True), browser)
    assert "error=access_denied" in back
    status, page, _ = browser.get(back)
    assert status == 200 and "access_denied" in page
    assert served.installations.listed() == []

    # A finished install's callback, replayed with the same cookie: its state is used.
    browser = Browser()
    back = served.to_slack_and_back(Install("T2", "Two"), browser)
    cookies = dict(browser.cookies)
    assert browser.get(back)[0] == 200
    replay = Browser()
    replay.cookies = cookies
    assert replay.get(back)[0] == 401
    assert [i.team_id for i in served.installations.listed()] == ["T2"]


def test_an_event_for_a_workspace_with_no_install_is_answered_and_nothing_stored(
    served: Served,
) -> None:
    served.install(Install("T2", "Two"))
    assert served.mention("T9", "C9", "hello?", "1700003200.000100", user="U9") == 200
    served.model.push(api.text("Here."))
    served.mention("T2", "C2", "hello?", "1700003200.000200", user="U2")
    wait_until(lambda: served.answer_in("C2", "1700003200.000200"))
    assert not [c for c in served.slack.calls() if c.args.get("channel") == "C9"]
    with served.thoth.db.read() as conn:
        teams = {row[0] for row in conn.execute("SELECT team FROM sessions").fetchall()}
    assert "T9" not in teams


def test_an_org_wide_install_answers_a_workspace_of_its_org(served: Served) -> None:
    assert served.install(Install(None, enterprise_id="E1", org_wide=True))[0] == 200
    (install,) = served.installations.listed()
    assert install.is_enterprise_install and install.enterprise_id == "E1"
    served.model.push(api.text("Hello from the org install."))
    assert served.mention("T3", "C3", "hi", "1700003300.000100", user="U3", enterprise="E1",
                          org_wide=True, bot="UBOTE1") == 200
    (started,) = wait_until(lambda: served.answer_in("C3", "1700003300.000100"))
    assert started.token == _tokens_of(served)["E1"]
    # Work that starts outside a request names only the workspace: its org is found.
    workspace = served.bridge.workspace_of
    assert workspace is not None
    found = served.bridge.runner.call(workspace("T3"))
    assert found is not None and found.bot_token == _tokens_of(served)["E1"]
    assert served.bridge.runner.call(workspace("T8")) is None


def test_reflection_cards_go_with_the_token_of_the_sessions_workspace(served: Served) -> None:
    import io

    from bridge.cli.reflect import build_notifier
    from bridge.slack.notifier import SlackNotifier
    from reflection.notify import PrintNotifier

    served.install(Install("T2", "Two"))
    notifier = build_notifier(served.thoth, "T2", io.StringIO())
    assert isinstance(notifier, SlackNotifier)
    ts = notifier._client.chat_postMessage(channel="C2", text="a card")["ts"]
    (posted,) = [c for c in served.slack.calls("chat.postMessage")
                 if c.args.get("channel") == "C2"]
    assert ts and posted.token == _tokens_of(served)["T2"]
    # A workspace Thoth is not installed in gets nothing posted: the card is printed.
    assert isinstance(build_notifier(served.thoth, "T9", io.StringIO()), PrintNotifier)


def test_thoth_serve_offers_add_to_slack_beside_the_console_and_mcp(tmp_path: Any) -> None:
    """The routes as `thoth serve` mounts them (MCP's app sits at the root): "Add to
    Slack" is served, and an install through it is kept."""
    import os
    import signal
    import subprocess
    import sys

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with FakeSlack() as slack:
        installs = AppInstalls(slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                               redirect_uris=(base + "/slack/oauth_redirect",))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLACK_", "ANTHROPIC_", "THOTH_", "CONSOLE_"))}
        env |= {"THOTH_HOME": str(tmp_path / "home"), "SLACK_TOKEN_KEYS": KEY,
                "SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
                "SLACK_SIGNING_SECRET": SECRET, "CONSOLE_URL": base,
                "SLACK_API_URL": slack.url, "HF_HUB_OFFLINE": "1"}
        serve = subprocess.Popen(
            [sys.executable, "-m", "bridge", "serve", "--host", "127.0.0.1", "--port",
             str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            assert serve.stdout is not None
            lines = [serve.stdout.readline() for _ in range(2)]
            assert lines[1].strip() == f"Add Thoth to a workspace: {base}/slack/install"
            assert install_through(base, installs, Install("T1", "One")) == 200
            assert [bot.install.team_id for bot in installs.bots.values()] == ["T1"]
        finally:
            serve.send_signal(signal.SIGTERM)
            _, errors = serve.communicate(timeout=60)
        assert serve.returncode == 0, errors


def test_the_console_asks_slack_about_a_member_through_their_workspaces_install(
    served: Served,
) -> None:
    """Signing in (console, MCP) and the private channels a member is in are asked of
    Slack with the token of the member's own workspace; a workspace with no install
    signs no one in."""
    from bridge.console.memberships import SlackMemberships
    from bridge.console.slack_sign_in import SlackSignIn
    from layers.errors import BadInput

    served.install(Install("T2", "Two"))
    settings = served.thoth.settings
    bot = build_async_web_client(settings)
    sign_in = SlackSignIn(client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                          api_url=settings.slack_api_url, founders=frozenset(), bot=bot,
                          workspace_of=served.bridge.workspace_of)
    memberships = SlackMemberships(bot, workspace_of=served.bridge.workspace_of)
    run = served.bridge.runner.call

    run(sign_in.check_member("T2", "U2"))
    (asked,) = served.slack.calls("users.info")
    assert asked.token == _tokens_of(served)["T2"]
    with pytest.raises(BadInput, match="installed in"):
        run(sign_in.check_member("T9", "U9"))

    assert run(memberships.private_channels("T2", "U2")) == frozenset()
    (listed,) = served.slack.calls("users.conversations")
    assert listed.token == _tokens_of(served)["T2"]
    assert run(memberships.private_channels("T9", "U9")) == frozenset()
    assert len(served.slack.calls("users.conversations")) == 1


def test_an_mcp_note_is_vouched_for_with_the_token_of_the_askers_workspace(
    served: Served,
) -> None:
    from bridge.mcp.asker import Asker
    from bridge.mcp.note_places import NotePlaces
    from bridge.mcp.server import _slack_of
    from layers.errors import BadInput

    served.install(Install("T2", "Two"))
    places = NotePlaces(_slack_of(served.thoth))
    place = places.place(Asker("T2", "U2"), "C2")
    assert (place.team, place.channel, place.channel_type) == ("T2", "C2", "public")
    (asked,) = served.slack.calls("conversations.info")
    assert asked.token == _tokens_of(served)["T2"]
    # Another workspace's channel is not one its token can see.
    with pytest.raises(BadInput, match="no channel"):
        places.place(Asker("T2", "U2"), "C1")
    # A workspace with no install: notes go to the person's DM only.
    with pytest.raises(BadInput, match="DM with Thoth"):
        places.place(Asker("T9", "U9"), "C9")
    assert places.place(Asker("T9", "U9"), "dm").channel_type == "im"


def test_the_loopback_keeps_each_installs_bot_apart_as_slack_does(served: Served) -> None:
    """Each install is its own bot user: in a channel shared by two workspaces, one
    install cannot edit or delete the other's message (Slack: cant_update_message), nor
    reach the other workspace's own channel, and a revoked token is refused."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    served.slack.add_channel("CSHARED", "shared", context_team_id="T1",
                             shared_team_ids=["T1", "T2"])
    tokens = _tokens_of(served)
    one = WebClient(token=tokens["T1"], base_url=served.slack.url)
    two = WebClient(token=tokens["T2"], base_url=served.slack.url)
    posted = one.chat_postMessage(channel="CSHARED", text="from one")
    assert posted["message"]["user"] == "UBOTT1"
    for refused, call in (
        ("cant_update_message", lambda: two.chat_update(channel="CSHARED", ts=posted["ts"],
                                                        text="changed")),
        ("cant_delete_message", lambda: two.chat_delete(channel="CSHARED", ts=posted["ts"])),
        ("channel_not_found", lambda: two.chat_postMessage(channel="C1", text="hi")),
    ):
        with pytest.raises(SlackApiError) as error:
            call()
        assert error.value.response["error"] == refused
    assert one.chat_update(channel="CSHARED", ts=posted["ts"], text="edited")["ok"]
    served.installs.uninstall("T1")
    with pytest.raises(SlackApiError) as error:
        one.auth_test()
    assert error.value.response["error"] == "token_revoked"
