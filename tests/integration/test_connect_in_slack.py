"""Connecting one's own account on a remote MCP server, as a person meets it in Slack
(issue 52): the model wants the tracker, Slack shows only the asker a "Connect tracker"
button, a real Chromium follows it through the console (Sign in with Slack on the
loopback Slack, back to the link, the tracker's own consent page, the console's
callback), and the conversation goes on by itself in the thread with the tracker's
tools acting as that person. Then `/thoth disconnect tracker` ends it.

The console is served in this process from the harness's own Thoth (as `thoth serve`
mounts it beside Slack's endpoint: one database, its own loop); the loop that goes on
with connected conversations is the one `thoth serve` starts (``keep_going_on``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette

from bridge.connections.oauth_client import Connector
from bridge.console.serving import console_mount
from bridge.console.sign_in import OneTimeLogin
from bridge.settings import Settings
from bridge.slack.connect_links import CONNECT_BUTTON, ConnectLinks
from bridge.web.server import WebServer
from layers.shared.token_cipher import TokenCipher
from tests.fakes import HashingEmbedder
from tests.integration.installs_harness import serving_installs
from tests.integration.slack_harness import CHANNEL, Harness, running_bridge
from tests.integration.test_mcp_oauth import CHROMIUM, CHROMIUM_ARGS, _free_port
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic, RecordedRequest
from tests.servers.oauth_mcp import CONSENT_PATH, OAuthMcpServer
from tests.servers.slack_install import Install
from tests.servers.slack_sign_in import SignInWithSlack
from tests.waiting import wait_until

if not Path(CHROMIUM).exists():  # pragma: no cover - .ci/run installs it
    pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does)",
                allow_module_level=True)

CLIENT_ID, CLIENT_SECRET = "111.222", "s3cret"


@dataclass
class Served:
    h: Harness
    tracker: OAuthMcpServer
    sign_in: SignInWithSlack
    console_url: str

    @property
    def links(self) -> ConnectLinks:
        asking = self.h.bridge.conversation.tool_asks
        assert asking is not None and asking.connect_links is not None
        return asking.connect_links

    @property
    def connector(self) -> Connector:
        assert self.h.thoth.team_tools is not None
        assert self.h.thoth.team_tools.connector is not None
        return self.h.thoth.team_tools.connector


@pytest.fixture
def served(model_settings: Settings, fake_anthropic: FakeAnthropic, tmp_path: Path,
           hashing_embedder: HashingEmbedder) -> Iterator[Served]:
    # CONSOLE_URL names the console's port before Thoth is built (the callback registered
    # with the tracker is under it).
    console_url = f"http://127.0.0.1:{_free_port()}"
    with OAuthMcpServer(access_lifetime_s=3600) as tracker:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"tracker": {
            "type": "http", "url": tracker.mcp_url, "auth": "oauth",
            "readOnly": ["whoami"]}}}))
        with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                            mcp_config=config, console_url=console_url,
                            slack_token_keys=SecretStr(TokenCipher.new_key()),
                            slack_client_id=CLIENT_ID,
                            slack_client_secret=SecretStr(CLIENT_SECRET)) as h:
            sign_in = SignInWithSlack(
                h.slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                redirect_uris=(f"{console_url}/console/signin/slack/callback",))
            console = WebServer(Starlette(routes=[console_mount(h.thoth, OneTimeLogin())]),
                                host="127.0.0.1", port=int(console_url.rsplit(":", 1)[1]))
            console.start()
            try:
                yield Served(h, tracker, sign_in, console_url)
            finally:
                console.stop()
                team_tools = h.thoth.team_tools
                if team_tools is not None:
                    h.bridge.runner.call(team_tools.aclose(), 30)


def _tool_names(request: RecordedRequest) -> set[str]:
    return {str(tool.get("name")) for tool in request.body.get("tools") or []}


def _connect_button(h: Harness, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The message only U1 sees in the thread, and its button."""
    def found() -> dict[str, Any] | None:
        return next((e for e in h.slack.ephemerals(CHANNEL)
                     if e.get("thread_ts") == thread and e.get("user") == "U1"), None)

    message = wait_until(found)
    blocks = message.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    (actions,) = [b for b in blocks if b.get("type") == "actions"]
    (button,) = actions["elements"]
    return message, button


def _browser_connects(url: str) -> list[str]:
    """A signed-out Chromium follows the button's link through to the end: the pages it
    was shown, in order (their addresses and what they said)."""
    from playwright.sync_api import sync_playwright

    seen: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.goto(url)
            seen.append(f"{page.url}\n{page.inner_text('body')}")
            page.click("#slack-sign-in")  # to Slack, back, and on to the tracker's consent
            page.wait_for_selector("button[value=allow]")
            seen.append(f"{page.url}\n{page.inner_text('body')}")
            with page.expect_navigation():
                page.get_by_role("button", name="Allow").click()
            seen.append(f"{page.url}\n{page.inner_text('body')}")
        finally:
            browser.close()
    return seen


def test_a_person_connects_from_the_thread_and_the_conversation_goes_on_as_them(
    served: Served, fake_anthropic: FakeAnthropic,
) -> None:
    h, tracker = served.h, served.tracker
    served.sign_in.signed_in_as = "U1"
    tracker.signed_in_as = "alice"
    h.bridge.runner.keep_running(served.links.keep_going_on(h.bridge.conversation.go_on))
    fake_anthropic.push(
        api.tool_use("tracker__connect", {}), api.text("I sent you a link to connect."),
        api.tool_use("tracker__whoami", {}), api.text("You are alice on the tracker."))
    thread = "1700000700.000100"
    assert h.mention("file an issue in the tracker", thread) == 200

    # 1. Not connected: the tracker is one thing to do, connect; its tools are not offered.
    first = fake_anthropic.wait_for_requests(1)[0]
    offered = _tool_names(first)
    assert "tracker__connect" in offered
    assert not offered & {"tracker__create_issue", "tracker__whoami"}
    message, button = _connect_button(h, thread)
    assert message["user"] == "U1" and message["thread_ts"] == thread
    link = str(button["url"])
    assert link.startswith(f"{served.console_url}/console/connections/start/tracker?ask=")
    assert button["action_id"] == CONNECT_BUTTON
    ask_id = parse_qs(urlsplit(link).query)["ask"][0]
    assert button["value"] == ask_id
    told = fake_anthropic.wait_for_requests(2)[1].body["messages"][-1]["content"][0]
    assert "a link to connect it was sent" in json.dumps(told)
    wait_until(lambda: any("I sent you a link" in json.dumps(m) for m in h.replies_in(thread)))

    # 2. The browser: signed out, sent to sign in; back to the link; the tracker's consent.
    started = time.monotonic()
    pages = _browser_connects(link)
    signed_out, consent, connected = pages
    assert "/console/connections/start/tracker" in signed_out.splitlines()[0]
    assert "Sign in with Slack" in signed_out
    assert consent.startswith(tracker.base) and "act as alice" in consent
    assert connected.startswith(f"{served.console_url}/console/connections")
    assert "Connected" in connected, connected
    assert "The conversation in Slack goes on now." in connected

    # 3. The conversation goes on by itself, the tracker's tools now offered as alice.
    going_on = fake_anthropic.wait_for_requests(3, timeout_s=20)[2]
    last = going_on.body["messages"][-1]
    assert last["role"] == "user" and "[connected tracker]" in json.dumps(last["content"])
    assert {"tracker__create_issue", "tracker__whoami"} <= _tool_names(going_on)
    assert "tracker__connect" not in _tool_names(going_on)
    result = fake_anthropic.wait_for_requests(4)[3].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "is_error" not in result, result
    assert "alice" in json.dumps(result["content"])
    wait_until(lambda: any("You are alice on the tracker." in json.dumps(m)
                           for m in h.replies_in(thread)))
    went_on_in_s = time.monotonic() - started
    assert went_on_in_s < 30, went_on_in_s
    assert tracker.bearer_tokens_seen and all(
        tracker.user_of(token) in ("alice", None) for token in tracker.bearer_tokens_seen)

    # 4. Gone on with once: claimed (continued_at set), nothing left for another claim.
    team_tools = h.thoth.team_tools
    assert team_tools is not None
    assert h.bridge.runner.call(team_tools.stores.run(lambda s: s.asks.connected())) == []
    with h.thoth.db.read() as conn:
        rows = conn.execute("SELECT state, decided_by, continued_at IS NOT NULL FROM tool_asks"
                            " WHERE id = ?", (ask_id,)).fetchall()
    assert [tuple(r) for r in rows] == [("allowed", "U1", 1)]
    assert len(fake_anthropic.requests) == 4
    # The audit log: the console's sign-in and connect, and the call as U1's own account.
    actions = {(e.actor, e.action) for e in h.thoth.audit.entries()}
    assert {("slack:U1", "login"), ("slack:U1", "connection.connect")} <= actions
    calls = h.thoth.audit.entries(action="tool.call")
    assert any("U1's own account" in e.detail for e in calls)


async def _connected_without_a_browser(connector: Connector, team: str, user: str) -> None:
    """The person's sign-in at the tracker, walked over plain HTTP, and its return handed
    to the connector as the console's callback does."""
    address = await connector.start(team, user, "tracker")
    async with httpx2.AsyncClient(follow_redirects=False, timeout=15) as http:
        consent = (await http.get(address)).headers["location"]
        consent = urljoin(address, consent)
        assert (await http.get(consent)).status_code == 200
        request = parse_qs(urlsplit(consent).query)["request"][0]
        decided = await http.post(urljoin(consent, CONSENT_PATH), data={
            "request": request, "decision": "allow"})
        back = parse_qs(urlsplit(decided.headers["location"]).query)
    await connector.finish(back["state"][0], code=back["code"][0], error=None,
                           issuer=back.get("iss", [None])[0], team=team, user=user)


def test_disconnect_in_a_dm_revokes_and_forgets_the_connection(served: Served) -> None:
    h, tracker = served.h, served.tracker
    h.slack.add_channel("D1", "dana-dm", "im")
    h.bridge.runner.call(_connected_without_a_browser(served.connector, "T1", "U1"), 30)

    def mine() -> list[Any]:
        return list(h.bridge.runner.call(served.connector.store.run(
            lambda store: store.of_person("T1", "U1"))))

    assert [c.server for c in mine()] == ["tracker"]
    assert h.command("/thoth", "disconnect tracker", channel="D1",
                     channel_name="directmessage")[0] == 200
    (said,) = wait_until(lambda: h.slack.ephemerals("D1"))
    assert "Disconnected tracker" in str(said["text"]), said
    assert mine() == []
    assert tracker.revoked, "the token was revoked at the tracker"
    # Asked again: nothing left to disconnect.
    assert h.command("/thoth", "disconnect tracker", channel="D1",
                     channel_name="directmessage")[0] == 200
    again = wait_until(lambda: len(h.slack.ephemerals("D1")) >= 2 and h.slack.ephemerals("D1"))
    assert "not connected to tracker" in str(again[1]["text"])


def test_a_person_deactivated_in_slack_loses_every_connection(served: Served) -> None:
    h, tracker = served.h, served.tracker
    for user in ("U1", "U2"):
        h.bridge.runner.call(_connected_without_a_browser(served.connector, "T1", user), 30)

    def connected() -> set[str]:
        rows = h.bridge.runner.call(served.connector.store.run(
            lambda store: store.of_workspace("T1")))
        return {connection.user for connection in rows}

    assert connected() == {"U1", "U2"}
    # A profile change of someone still active ends nothing; then Slack's user_change as
    # an admin deactivating dana sends it ends hers (and only hers).
    assert h.event({"type": "user_change", "cache_ts": int(time.time()), "user": {
        "id": "U2", "team_id": "T1", "name": "ari", "deleted": False}}) == 200
    assert h.event({"type": "user_change", "cache_ts": int(time.time()), "user": {
        "id": "U1", "team_id": "T1", "name": "dana", "deleted": True,
        "profile": {"real_name": "dana"}}}) == 200
    assert wait_until(lambda: "U1" not in connected())
    assert connected() == {"U2"}
    assert tracker.revoked, "dana's token was revoked at the tracker"


@dataclass
class Installed:
    """Thoth installed through Slack's OAuth flow, with the tracker in its mcp.json."""

    served: Any
    tracker: OAuthMcpServer
    connector: Connector

    def connect(self, team: str, user: str) -> None:
        self.served.bridge.runner.call(_connected_without_a_browser(
            self.connector, team, user), 30)

    def teams(self, *teams: str) -> set[str]:
        """Which of ``teams`` have a connection left."""
        return {team for team in teams if self.served.bridge.runner.call(
            self.connector.store.run(lambda store, t=team: store.of_workspace(t)))}


@pytest.fixture
def installed(model_settings: Settings, fake_anthropic: FakeAnthropic, tmp_path: Path,
              hashing_embedder: HashingEmbedder) -> Iterator[Installed]:
    with OAuthMcpServer() as tracker:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"tracker": {
            "type": "http", "url": tracker.mcp_url, "auth": "oauth"}}}))
        with serving_installs(model_settings, fake_anthropic, hashing_embedder,
                              mcp_config=config) as served:
            tools = served.thoth.team_tools
            assert tools is not None and tools.connector is not None
            yield Installed(served, tracker, tools.connector)


def test_a_workspace_that_uninstalls_loses_every_connection(installed: Installed) -> None:
    served = installed.served
    served.install(Install("T1", "One"))
    served.install(Install("T2", "Two"))
    for team, user in (("T1", "U1"), ("T2", "U2")):
        installed.connect(team, user)
    assert installed.teams("T1", "T2") == {"T1", "T2"}
    served.installs.uninstall("T1")
    assert served.event("T1", {"type": "app_uninstalled"}) == 200
    assert wait_until(lambda: installed.teams("T1", "T2") == {"T2"})
    assert installed.tracker.revoked, "T1's token was revoked at the tracker"


def test_a_workspace_an_org_takes_its_install_from_loses_its_connections(
    installed: Installed,
) -> None:
    served = installed.served
    served.install(Install(None, enterprise_id="E1", org_wide=True))
    for team, user in (("T3", "U3"), ("T8", "U8")):
        installed.connect(team, user)
    assert served.event("T3", {"type": "team_access_granted", "team_ids": ["T8"]},
                        enterprise="E1", org_wide=True) == 200
    assert installed.teams("T3", "T8") == {"T3", "T8"}
    # The org's admin takes the install from T8: T8's people lose theirs, T3 keeps.
    assert served.event("T3", {"type": "team_access_revoked", "team_ids": ["T8"]},
                        enterprise="E1", org_wide=True) == 200
    assert wait_until(lambda: installed.teams("T3", "T8") == {"T3"})
