"""Each person's own account on a remote MCP server (``bridge/connections/``), against an
authorization server nobody wrote for Thoth's client: the MCP SDK's own auth routes
(``tests/servers/oauth_mcp.py``), a real Chromium clicking through its consent page.

Thoth is built as the composition root builds it (``mcp.json`` with ``"auth": "oauth"``,
CONSOLE_URL, SLACK_TOKEN_KEYS); the browser comes back to a loopback listener standing
where the console's callback is, and the test hands its query to the client as the
console's route does.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.connections.discovery import ConnectRefused
from bridge.connections.oauth_client import CALLBACK_PATH, Connector
from bridge.connections.store import Tokens
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from bridge.team_tools.connection import ServerDown
from bridge.team_tools.team_tools import NeedsConnecting, ServerTool, TeamTools
from layers.identity.protocol import Person
from layers.shared.errors import BadInput
from layers.shared.places import Place
from layers.shared.token_cipher import TokenCipher
from tests.fakes import HashingEmbedder, RecordingSink
from tests.integration.test_mcp_oauth import CHROMIUM, CHROMIUM_ARGS
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.loopback import LoopbackHandler, LoopbackServer
from tests.servers.oauth_mcp import OAuthMcpServer

DANA, ARI = Person("T1", "U1", "Dana"), Person("T1", "U2", "Ari")
DM = Place("T1", "D1", "im", None, None)


class Returns(LoopbackServer):
    """Where the console would take the browser's return: what came back."""

    def __init__(self) -> None:
        returned: list[str] = []
        self.returned = returned

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:
                if self.path.startswith(CALLBACK_PATH):
                    returned.append(self.path)
                self.send_body(200, b"back", "text/plain")

        self._serve(Handler)


async def _clicked_through(url: str, decision: str = "Allow") -> list[str]:
    """What the pages said, the browser having clicked ``decision`` where asked."""
    from playwright.async_api import async_playwright

    pages: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(url)
            pages.append(await page.inner_text("body"))
            button = page.get_by_role("button", name=decision)
            if await button.count():
                async with page.expect_navigation():
                    await button.click()
        finally:
            await browser.close()
    return pages


@dataclass
class World:
    app: Thoth
    server: OAuthMcpServer
    returns: Returns
    logs: list[str] = field(default_factory=list)

    @property
    def tools(self) -> TeamTools:
        assert self.app.team_tools is not None
        return self.app.team_tools

    @property
    def connector(self) -> Connector:
        assert self.tools.connector is not None
        return self.tools.connector

    async def connect(self, person: Person, signed_in_as: str) -> None:
        """The person clicks their link, allows Thoth at the server, comes back."""
        assert person.user is not None
        self.server.signed_in_as = signed_in_as
        address = await self.connector.start(person.team, person.user, "tracker")
        await _clicked_through(address)
        query = parse_qs(urlsplit(self.returns.returned[-1]).query)
        await self.connector.finish(
            query["state"][0], code=query.get("code", [None])[0],
            error=query.get("error", [None])[0], issuer=query.get("iss", [None])[0],
            team=person.team, user=person.user)

    async def whoami(self, person: Person) -> str:
        answer = await self.tools.run("tracker", "whoami", {}, actor=f"slack:{person.user}",
                                      how="read", person=person)
        return answer.for_model


def _built(settings: Settings, tmp_path: Path, server: OAuthMcpServer, returns: Returns,
           embedder: HashingEmbedder, **oauth: Any) -> Thoth:
    config = tmp_path / "mcp.json"
    entry: dict[str, Any] = {"type": "http", "url": server.mcp_url, "auth": "oauth",
                             "readOnly": ["whoami"]}
    if oauth:
        entry["oauth"] = oauth
    config.write_text(json.dumps({"mcpServers": {"tracker": entry}}))
    return build(settings.model_copy(update={
        "mcp_config": config, "console_url": returns.url,
        "slack_token_keys": SecretStr(TokenCipher.new_key())}), embedder=embedder)


@pytest.fixture
def world(model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
          caplog: pytest.LogCaptureFixture) -> Iterator[World]:
    caplog.set_level(logging.DEBUG)
    with OAuthMcpServer(access_lifetime_s=3600) as server, Returns() as returns:
        app = _built(model_settings, tmp_path, server, returns, hashing_embedder)
        yield World(app, server, returns)
        asyncio.run(_closed(app))


async def _closed(app: Thoth) -> None:
    if app.team_tools is not None:
        await app.team_tools.aclose()
    app.close()


def test_two_people_connect_and_each_call_goes_with_the_askers_own_token(
    world: World, caplog: pytest.LogCaptureFixture, model_settings: Settings,
) -> None:
    async def scenario() -> tuple[str, str, list[Any], list[Any]]:
        before = await world.tools.listed(DM, DANA)
        await world.connect(DANA, "alice")
        await world.connect(ARI, "bob")
        after = await world.tools.listed(DM, DANA)
        dana, ari = await world.whoami(DANA), await world.whoami(ARI)
        await world.tools.aclose()
        return dana, ari, before, after

    dana, ari, before, after = asyncio.run(scenario())
    # Not connected, the server is one thing to do: connect.
    assert before == [NeedsConnecting("tracker")]
    assert {item.tool.name for item in after if isinstance(item, ServerTool)} >= {
        "whoami", "create_issue"}
    assert "alice" in dana and "bob" in ari
    # The client's side of the specification, as the server saw it.
    for asked in world.server.authorize_requests:
        assert asked["code_challenge_method"] == "S256"
        assert asked["resource"] == world.server.mcp_url
        assert len(asked["state"]) >= 32
    exchanges = [r for r in world.server.token_requests if r["grant_type"] == "authorization_code"]
    assert len(exchanges) == 2
    assert all(r["has_code_verifier"] and r["resource"] == world.server.mcp_url
               for r in exchanges)
    # Thoth registered itself once, and both sign-ins used that registration.
    assert len(world.server.registered) == 1
    assert world.server.registered[0]["redirect_uris"] == [
        world.returns.url.rstrip("/") + CALLBACK_PATH]
    # Each token went to the server, and is nowhere Thoth writes in clear.
    tokens = set(world.server.bearer_tokens_seen)
    assert len(tokens) == 2
    stored = (model_settings.thoth_home / "thoth.db").read_bytes()
    wal = model_settings.thoth_home / "thoth.db-wal"
    stored += wal.read_bytes() if wal.exists() else b""
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for token in tokens:
        assert token.encode() not in stored
        assert token not in logged
    # The audit log says whose account each call used.
    lines = [line.detail for line in world.app.audit.entries(action="tool.call")]
    assert any("U1's own account" in line for line in lines)
    assert any("U2's own account" in line for line in lines)


def test_disconnecting_revokes_at_the_server_and_asks_again(world: World) -> None:
    async def scenario() -> tuple[list[Any], str]:
        await world.connect(DANA, "alice")
        assert await world.connector.disconnect("T1", "U1", "tracker", actor="slack:U1",
                                                origin="test")
        listed = await world.tools.listed(DM, DANA)
        try:
            await world.whoami(DANA)
        except BadInput as refused:
            return listed, str(refused)
        finally:
            await world.tools.aclose()
        return listed, ""

    listed, refused = asyncio.run(scenario())
    assert listed == [NeedsConnecting("tracker")]
    assert refused  # its token is gone: the call did not go as anyone
    assert world.server.revoked, "the refresh token was revoked at the server"


def _whoami_once_connected(settings: Settings, tmp_path: Path, embedder: HashingEmbedder,
                           server_options: dict[str, Any], **oauth: Any,
                           ) -> tuple[OAuthMcpServer, str]:
    """dana connects (as alice) to a server built with ``server_options`` and asks it who
    she is: the server, and what it answered."""
    with OAuthMcpServer(**server_options) as server, Returns() as returns:
        app = _built(settings, tmp_path, server, returns, embedder, **oauth)
        world = World(app, server, returns)

        async def scenario() -> str:
            await world.connect(DANA, "alice")
            said = await world.whoami(DANA)
            await world.tools.aclose()
            return said

        try:
            return server, asyncio.run(scenario())
        finally:
            asyncio.run(_closed(app))


def test_a_token_about_to_lapse_is_renewed_before_it_is_used(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
) -> None:
    # 30 s of life: within the minute before it lapses, so renewed at its first use.
    server, said = _whoami_once_connected(model_settings, tmp_path, hashing_embedder,
                                          {"access_lifetime_s": 30})
    assert "alice" in said
    renewals = [r for r in server.token_requests if r["grant_type"] == "refresh_token"]
    assert len(renewals) >= 1 and renewals[0]["resource"] == server.mcp_url
    # The token exchanged at the sign-in never reached the server: a renewed one did.
    assert server.user_of(server.bearer_tokens_seen[-1]) == "alice"


def test_openid_discovery_and_a_client_id_the_operator_registered(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
) -> None:
    server, said = _whoami_once_connected(
        model_settings, tmp_path, hashing_embedder,
        {"metadata_at": "openid", "registration": False,
         "pre_registered": {"thoth-client": "its-secret"}},
        clientId="thoth-client", clientSecret="its-secret")
    assert "alice" in said
    assert not server.registered
    assert {r["client_id"] for r in server.token_requests} == {"thoth-client"}


@pytest.mark.parametrize(("server_options", "said"), [
    ({"pkce": False}, "PKCE"),
    ({"resource_override": "http://127.0.0.1:9/elsewhere"}, "refused, so that no token"),
    ({"registration": False}, "takes no registration"),
])
def test_a_server_thoth_must_not_sign_in_to_is_refused_in_one_line(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    server_options: dict[str, Any], said: str,
) -> None:
    with OAuthMcpServer(**server_options) as server, Returns() as returns:
        app = _built(model_settings, tmp_path, server, returns, hashing_embedder)
        connector = app.team_tools.connector if app.team_tools else None
        assert connector is not None
        try:
            with pytest.raises(ConnectRefused, match=said) as refused:
                asyncio.run(connector.start("T1", "U1", "tracker"))
        finally:
            asyncio.run(_closed(app))
    assert "\n" not in str(refused.value)
    assert not server.authorize_requests, "nothing was sent to the server's sign-in"


def test_a_return_is_taken_once_and_only_for_the_person_who_began_it(world: World) -> None:
    async def scenario() -> tuple[list[str], list[Any]]:
        refusals = []
        world.server.signed_in_as = "alice"
        address = await world.connector.start("T1", "U1", "tracker")
        await _clicked_through(address)
        query = parse_qs(urlsplit(world.returns.returned[-1]).query)
        state, code = query["state"][0], query["code"][0]
        for team, user, tried in (("T1", "U2", state), ("T1", "U1", "forged")):
            try:
                await world.connector.finish(tried, code=code, error=None, issuer=None,
                                             team=team, user=user)
            except ConnectRefused as refused:
                refusals.append(str(refused))
        # ari's attempt used up nothing: dana's own return still connects her, once.
        await world.connector.finish(state, code=code, error=None, issuer=None,
                                     team="T1", user="U1")
        try:
            await world.connector.finish(state, code=code, error=None, issuer=None,
                                         team="T1", user="U1")
        except ConnectRefused as refused:
            refusals.append(str(refused))
        listed = await world.tools.listed(DM, DANA)
        await world.tools.aclose()
        return refusals, listed

    refusals, listed = asyncio.run(scenario())
    assert "someone else" in refusals[0]
    assert "not one Thoth began" in refusals[1]
    assert "used already" in refusals[2]
    assert any(isinstance(item, ServerTool) for item in listed)


def test_a_token_endpoint_down_for_a_moment_keeps_the_connection(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
) -> None:
    with OAuthMcpServer(access_lifetime_s=1) as server, Returns() as returns:
        app = _built(model_settings, tmp_path, server, returns, hashing_embedder)
        world = World(app, server, returns)

        async def scenario() -> tuple[list[Any], str]:
            await world.connect(DANA, "alice")
            await asyncio.sleep(1.2)  # lapsed
            server.outage[0] = 1
            during = await world.tools.listed(DM, DANA)
            after = await world.whoami(DANA)  # the server is back: renewed now
            await world.tools.aclose()
            return during, after

        try:
            during, after = asyncio.run(scenario())
        finally:
            asyncio.run(_closed(app))
    # Left out of that turn, saying why; not "connect again": the grant was kept.
    (down,) = during
    assert isinstance(down, ServerDown) and "HTTP 503" in str(down), down
    assert "alice" in after


def test_two_replicas_renew_a_token_once(world: World) -> None:
    async def scenario() -> tuple[str | None, str | None]:
        await world.connect(DANA, "alice")
        store = world.connector.store
        tokens = await store.run(lambda kept: kept.tokens("T1", "U1", "tracker"))
        assert tokens is not None
        lapsed = Tokens(tokens.access, tokens.refresh, tokens.scope, time.time() - 1)
        await store.run(lambda kept: kept.renewed("T1", "U1", "tracker", lapsed))
        # Another replica: a Connector of its own (its own locks) on the same database.
        other = Connector(world.connector.servers, store, world.connector.redirect_uri)
        first, second = await asyncio.gather(
            world.connector.access_token("T1", "U1", "tracker"),
            other.access_token("T1", "U1", "tracker"))
        return first, second

    first, second = asyncio.run(scenario())
    assert first is not None and first == second
    renewals = [r for r in world.server.token_requests if r["grant_type"] == "refresh_token"]
    assert len(renewals) == 1
    assert world.server.user_of(first) == "alice"


def test_oauth_servers_are_refused_without_what_keeps_tokens(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tracker": {
        "type": "http", "url": "https://mcp.example.com/mcp", "auth": "oauth"}}}))
    app = build(model_settings.model_copy(update={"mcp_config": config}),
                embedder=hashing_embedder)
    try:
        assert app.team_tools is not None and app.team_tools.connector is None
        why = app.team_tools.config.refused["tracker"]
        assert "CONSOLE_URL" in why and "SLACK_TOKEN_KEYS" in why
    finally:
        app.close()


def test_a_turn_without_a_way_to_send_a_link_is_told_so(world: World) -> None:
    async def scenario() -> str:
        tools = await world.tools.offered(Turn("s", "hi", DM, user="U1", user_name="Dana"))
        (connect,) = tools
        assert connect.name == "tracker__connect"
        answer = await connect.handle(_Caller(), _no_arguments())  # type: ignore[arg-type]
        return answer.for_model

    told = asyncio.run(scenario())
    assert "console" in told and "cannot be used" in told


class _Caller:
    actor = "slack:U1"
    skills_in_use: frozenset[str] = frozenset()


def _no_arguments() -> Any:
    from bridge.pipeline.tools.arguments import Arguments

    return Arguments({})



def test_a_turn_calls_the_tool_as_its_speaker_and_the_model_never_sees_a_token(
    world: World, fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.push(api.tool_use("tracker__whoami", {}), api.text("You are alice there."))

    async def scenario() -> TurnOutcome:
        await world.connect(DANA, "alice")
        outcome = await world.app.pipeline.handle(
            Turn("s1", "who am I in the tracker?", DM, user="U1", user_name="Dana"),
            RecordingSink())
        await world.app.pipeline.drain(10)
        await world.tools.aclose()
        return outcome

    outcome = asyncio.run(scenario())
    assert outcome.ok and outcome.reply == "You are alice there."
    (result,) = fake_anthropic.requests[-1].body["messages"][-1]["content"]
    assert "alice" in str(result["content"])
    (token,) = set(world.server.bearer_tokens_seen)
    assert all(token not in json.dumps(request.body) for request in fake_anthropic.requests)


def test_tools_list_shows_where_people_sign_in(
    isolated_environment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bridge.cli.main import main

    with OAuthMcpServer() as server:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"tracker": {
            "type": "http", "url": server.mcp_url, "auth": "oauth"}}}))
        monkeypatch.setenv("MCP_CONFIG", str(config))
        monkeypatch.setenv("CONSOLE_URL", "https://thoth.example")
        monkeypatch.setenv("SLACK_TOKEN_KEYS", TokenCipher.new_key())
        out = io.StringIO()
        assert main(["tools", "list"], stdout=out, stderr=out) == 0, out.getvalue()
    said = out.getvalue()
    assert "each person connects their own account" in said and server.base in said
    assert not server.authorize_requests and not server.registered
