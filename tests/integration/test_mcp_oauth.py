"""Signing in to MCP over HTTP through OAuth, with Slack as the identity provider, as an
MCP client does it: the SDK's own ``OAuthClientProvider`` discovers the server, registers
itself and sends a real browser (Chromium, through Playwright) to /authorize; the loopback
Slack signs the person in and sends the browser back; the person allows the client on
Thoth's page; the client exchanges the code and calls tools as that person. Against a
real `thoth console` subprocess (it serves /mcp as `thoth serve` does)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AuthorizationParams
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.routing import Mount

from bridge.access.tables import SCHEMA
from bridge.access.tokens import McpTokens
from bridge.cli.main import main
from bridge.mcp.oauth import SCOPE, SlackOAuth
from bridge.mcp.oauth_front import OAuthFront
from bridge.mcp.oauth_grants import OAuthGrants
from bridge.mcp.rate_limit import PerAddress
from bridge.slack_api.sign_in_with_slack import SlackSignIn
from bridge.web.server import WebServer
from layers.shared.audit.log import AuditLog
from layers.shared.audit.tables import SCHEMA as AUDIT
from layers.shared.storage.database import Database
from layers.shared.storage.engines import open_sqlite
from tests.servers.loopback import LoopbackHandler, LoopbackServer
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_sign_in import SignInWithSlack

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CLIENT_ID, CLIENT_SECRET = "111.222", "s3cret"
EPISODES = [
    ("dm-dana", "The launch codename is Bluebird, keep it quiet", "D1", "im", "U1"),
    ("dm-ari", "The launch codename is Redwing, only between us", "D2", "im", "U2"),
    ("public", "The launch is on March 3rd, announced in general", "C1", "public", "U2"),
]
QUERY = {"query": "what is the launch codename and date?", "k": 10}


def _free_port() -> int:
    # CONSOLE_URL must name the port before the server starts (it is the OAuth issuer).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _thoth(*args: str) -> str:
    out = io.StringIO()
    assert main(list(args), stdout=out, stderr=out) == 0, out.getvalue()
    return out.getvalue()


@dataclass
class Served:
    base: str
    slack: FakeSlack
    sign_in: SignInWithSlack

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"


@pytest.fixture
def served(isolated_environment: Path, tmp_path: Path) -> Iterator[Served]:
    lines = [{"id": episode_id, "user_text": text, "summary": "", "team": "T1",
              "channel": channel, "channel_type": kind, "user": user, "user_name": user,
              "created_at": "2026-11-20T10:00:00+00:00"}
             for episode_id, text, channel, kind, user in EPISODES]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(json.dumps(line) + "\n" for line in lines))
    _thoth("episodes", "import", str(episodes))
    base = f"http://127.0.0.1:{_free_port()}"
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        slack.add_user("U2", "ari")
        slack.add_user("U9", "gus", is_restricted=True)  # a guest
        slack.add_channel("C1", "general")
        sign_in = SignInWithSlack(slack, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                  redirect_uris=(f"{base}/mcp/signin/slack/callback",))
        env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.url,
               "SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
               "CONSOLE_URL": base}
        process = subprocess.Popen(
            [sys.executable, "-m", "bridge", "console", "--port", base.rsplit(":", 1)[1]],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert "/console/login/" in first, (first, process.stderr.read()
                                                if process.stderr else "")
            yield Served(base, slack, sign_in)
        finally:
            process.terminate()
            process.wait(timeout=30)


@dataclass
class Kept:
    """The client's token storage (as a real client keeps it in a file)."""
    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class ClientCallback(LoopbackServer):
    """Where an MCP client listens for the browser's return (Claude Code runs one on
    127.0.0.1): what came back."""

    def __init__(self) -> None:
        returned: list[str] = []
        self.returned = returned

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/callback"):  # not the browser's /favicon.ico
                    returned.append(self.path)
                self.send_body(200, b"You may close this window.", "text/plain")

        self._serve(Handler)
        self.url_path = "/callback"


@dataclass
class Browser:
    """What the person does in the browser the client opened: Allow or Deny on Thoth's
    page; what the page said, and where the browser came back to the client."""
    callback: ClientCallback
    decision: str = "Allow"
    pages: list[str] = field(default_factory=list)

    @property
    def returned(self) -> list[str]:
        return self.callback.returned

    async def open(self, url: str) -> None:
        from playwright.async_api import async_playwright

        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                       args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                await page.goto(url)
                self.pages.append(await page.inner_text("body"))
                button = page.get_by_role("button", name=self.decision)
                if await button.count():
                    async with page.expect_navigation():
                        await button.click()
            finally:
                await browser.close()

    async def came_back(self) -> AuthorizationCodeResult:
        assert self.returned, f"the browser never came back to the client: {self.pages}"
        query = parse_qs(urlsplit(self.returned[-1]).query)
        if "error" in query:
            raise OAuthFlowError(f"authorization refused: {query['error'][0]}")
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])


@pytest.fixture
def callback() -> Iterator[ClientCallback]:
    with ClientCallback() as listening:
        yield listening


def _client(served: Served, browser: Browser, kept: Kept) -> OAuthClientProvider:
    return sdk_client(served.mcp, browser, kept)


def sdk_client(server_url: str, browser: Browser, kept: Kept) -> OAuthClientProvider:
    """The MCP SDK's own OAuth client, as Claude Code registers (a public client), sending
    ``browser`` to sign in."""
    return OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            client_name="Claude Code",
            redirect_uris=[browser.callback.url],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none"),
        storage=kept, redirect_handler=browser.open, callback_handler=browser.came_back)


async def _recall(served: Served, auth: httpx2.Auth) -> set[str]:
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http, \
            streamable_http_client(served.mcp, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("recall", QUERY)
    assert not result.is_error, result.content
    return {hit["id"] for hit in result.structured_content["result"]}


def _flow_refused(served: Served, browser: Browser) -> str:
    """Why the client's sign-in failed (the SDK's task groups wrap what the flow raised)."""
    try:
        asyncio.run(_recall(served, _client(served, browser, Kept())))
    except BaseExceptionGroup as refused:
        return " ".join(str(error) for error in _leaves(refused))
    raise AssertionError("the client signed in")


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    return [leaf for error in group.exceptions for leaf in (
        _leaves(error) if isinstance(error, BaseExceptionGroup) else [error])]


def _bearer_status(served: Served, token: str) -> int:
    return httpx2.post(served.mcp, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json"},
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', timeout=30).status_code


def test_a_person_signs_in_with_slack_allows_the_client_and_reads_as_themselves(
    served: Served, callback: ClientCallback,
) -> None:
    served.sign_in.signed_in_as = "U1"
    browser, kept = Browser(callback), Kept()

    seen = asyncio.run(_recall(served, _client(served, browser, kept)))

    # Thoth's own page named the person and the client, and where its key would go.
    (consent,) = browser.pages
    assert "dana" in consent and "Claude Code" in consent
    assert urlsplit(browser.callback.url).netloc in consent
    # dana reads her DM and the public channel, never ari's DM.
    assert seen == {"dm-dana", "public"}
    assert kept.tokens is not None and kept.tokens.refresh_token is not None
    assert kept.tokens.expires_in == 3600
    # The sign-in is one of dana's tokens: listed, and revoked like any other.
    (line,) = [line for line in _thoth("tokens", "list").splitlines() if "Claude Code" in line]
    assert "T1:U1" in line and "signed in with Slack" in line
    access = kept.tokens.access_token
    assert _bearer_status(served, access) == 200
    _thoth("tokens", "revoke", line.split()[0])
    assert _bearer_status(served, access) == 401


def test_a_refresh_token_renews_the_sign_in_once_and_a_stolen_one_ends_it(
    served: Served, callback: ClientCallback,
) -> None:
    served.sign_in.signed_in_as = "U2"
    browser, kept = Browser(callback), Kept()
    assert asyncio.run(_recall(served, _client(served, browser, kept))) == {"dm-ari", "public"}
    assert kept.tokens is not None and kept.client is not None
    first = kept.tokens

    def refreshed(refresh: str) -> httpx2.Response:
        assert kept.client is not None
        return httpx2.post(served.base + "/token", data={
            "grant_type": "refresh_token", "refresh_token": refresh,
            "client_id": kept.client.client_id or ""}, timeout=30)

    renewed = refreshed(first.refresh_token or "")
    assert renewed.status_code == 200, renewed.text
    second = renewed.json()
    assert second["access_token"] != first.access_token
    assert _bearer_status(served, second["access_token"]) == 200
    # The renewal replaced both: the old access token is refused at once.
    assert _bearer_status(served, first.access_token) == 401

    # While Slack says ari is deactivated, a renewal is refused (and spends nothing).
    served.slack.add_user("U2", "ari", deleted=True)
    gone = refreshed(second["refresh_token"])
    assert gone.status_code == 400 and gone.json()["error"] == "invalid_grant"
    assert "full members" in gone.json()["error_description"]
    served.slack.add_user("U2", "ari")
    third = refreshed(second["refresh_token"])
    assert third.status_code == 200, third.text

    # The refresh token the last renewal replaced, shown again: two hold it (a thief
    # renewed first, or the client did), so the sign-in ends.
    stolen = refreshed(second["refresh_token"])
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
    assert _bearer_status(served, third.json()["access_token"]) == 401
    assert refreshed(third.json()["refresh_token"]).status_code == 400


def test_the_client_revokes_its_own_sign_in(served: Served, callback: ClientCallback) -> None:
    served.sign_in.signed_in_as = "U1"
    browser, kept = Browser(callback), Kept()
    asyncio.run(_recall(served, _client(served, browser, kept)))
    assert kept.tokens is not None and kept.client is not None
    access = kept.tokens.access_token
    # Another client cannot revoke it (RFC 7009: only the client it was issued to).
    other = httpx2.post(served.base + "/register", json={
        "redirect_uris": [callback.url], "token_endpoint_auth_method": "none",
        "client_name": "Other"}, timeout=30).json()

    def revoke(client_id: str) -> int:
        # The SDK's revocation form wants client_secret even from a public client.
        return httpx2.post(served.base + "/revoke", data={
            "token": access, "client_id": client_id, "client_secret": ""},
            timeout=30).status_code

    assert revoke(other["client_id"]) == 200  # RFC 7009: 200 whatever it did
    assert _bearer_status(served, access) == 200
    assert revoke(kept.client.client_id or "") == 200
    assert _bearer_status(served, access) == 401
    assert "revoked" in next(line for line in _thoth("tokens", "list").splitlines()
                             if "Claude Code" in line)


@pytest.mark.parametrize("redirect", [
    "http://evil.example/callback",  # the code in clear over the network
    "https://claude.ai@evil.example/callback",  # reads as claude.ai
    "javascript:alert(1)",
    "data:text/html,hi",
])
def test_a_client_may_register_only_an_address_an_mcp_client_listens_at(
    served: Served, redirect: str,
) -> None:
    refused = httpx2.post(served.base + "/register", json={
        "redirect_uris": [redirect], "token_endpoint_auth_method": "none"}, timeout=30)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_redirect_uri"


def test_loopback_https_and_app_schemes_register() -> None:
    from bridge.mcp.oauth import redirect_origin

    assert redirect_origin("http://127.0.0.1:33418/callback") == "http://127.0.0.1:33418"
    assert redirect_origin("http://localhost/cb") == "http://localhost"
    assert redirect_origin("https://app.example.com/oauth") == "https://app.example.com"
    assert redirect_origin("cursor://anysphere.cursor-mcp/oauth/callback") == "cursor:"
    assert redirect_origin("http://[::1]:8080/cb") == "http://[::1]:8080"
    assert redirect_origin("http://10.0.0.5/cb") is None


def test_deny_gives_the_client_nothing(served: Served, callback: ClientCallback) -> None:
    served.sign_in.signed_in_as = "U1"
    browser = Browser(callback, decision="Deny")
    assert "access_denied" in _flow_refused(served, browser)
    assert "Claude Code" not in _thoth("tokens", "list")


def test_a_guest_is_refused_on_the_page_with_one_line(
    served: Served, callback: ClientCallback,
) -> None:
    served.sign_in.signed_in_as = "U9"
    browser = Browser(callback)
    assert "never came back" in _flow_refused(served, browser)
    (page,) = browser.pages
    assert "Not signed in" in page and "full members" in page
    assert not browser.returned
    assert "Claude Code" not in _thoth("tokens", "list")


def test_a_code_and_a_consent_work_once(served: Served, callback: ClientCallback) -> None:
    served.sign_in.signed_in_as = "U1"
    browser, kept = Browser(callback), Kept()
    asyncio.run(_recall(served, _client(served, browser, kept)))
    assert kept.client is not None
    code = parse_qs(urlsplit(browser.returned[-1]).query)["code"][0]
    replayed = httpx2.post(served.base + "/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": callback.url,
        "client_id": kept.client.client_id or "", "code_verifier": "x" * 50}, timeout=30)
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    # A code shown twice: someone else has it, so what it gave is revoked.
    assert kept.tokens is not None
    assert _bearer_status(served, kept.tokens.access_token) == 401
    stale = httpx2.post(served.base + "/mcp/signin/consent",
                        data={"consent": "not-a-consent", "decision": "allow"}, timeout=30)
    assert stale.status_code == 400 and "start again" in stale.text


def test_metadata_points_clients_at_thoth_as_its_own_authorization_server(
    served: Served,
) -> None:
    resource = httpx2.get(served.base + "/.well-known/oauth-protected-resource/mcp",
                          timeout=30).json()
    assert resource["resource"] == served.mcp
    assert resource["authorization_servers"] == [served.base] or \
        resource["authorization_servers"] == [served.base + "/"]
    server = httpx2.get(served.base + "/.well-known/oauth-authorization-server",
                        timeout=30).json()
    assert server["registration_endpoint"] == served.base + "/register"
    assert server["code_challenge_methods_supported"] == ["S256"]
    unauthorized = httpx2.post(served.mcp, content=b"{}", timeout=30)
    assert unauthorized.status_code == 401
    assert re.search(r'resource_metadata="[^"]+/.well-known/oauth-protected-resource/mcp"',
                     unauthorized.headers["www-authenticate"])


# The SDK's authorization-server routes behind Thoth's front (oauth_front.py), in this
# process: the rate limits' clock is the test's, and a code is granted as the consent
# page's Allow grants it (the Slack and browser legs are the tests above).


@dataclass
class Fronted:
    base: str
    db: Database
    grants: OAuthGrants
    oauth: SlackOAuth
    now: list[float]

    def code_for(self, client_id: str, verifier: str) -> str:
        """A one-time code for ``client_id``, as dana's Allow on the consent page gives."""
        params = AuthorizationParams(
            state="s", scopes=[SCOPE], code_challenge=_challenge(verifier),
            redirect_uri=AnyUrl(REDIRECT), redirect_uri_provided_explicitly=True)
        self.grants.put("consent", "consent-" + verifier, {
            "client_id": client_id, "params": params.model_dump(mode="json"),
            "team": "T1", "user": "U1", "name": "dana"}, ttl_s=600)
        back = asyncio.run(self.oauth.decided("consent-" + verifier, allowed=True))
        return parse_qs(urlsplit(back).query)["code"][0]

    def exchange(self, client_id: str, verifier: str, *, secret: str | None = None,
                 basic: bool = False) -> httpx2.Response:
        form = {"grant_type": "authorization_code", "code": self.code_for(client_id, verifier),
                "redirect_uri": REDIRECT, "client_id": client_id, "code_verifier": verifier}
        auth = None
        if secret is not None and basic:
            auth = httpx2.BasicAuth(client_id, secret)
        elif secret is not None:
            form["client_secret"] = secret
        return httpx2.post(self.base + "/token", data=form, auth=auth, timeout=30)

    def stored_clients(self) -> str:
        with self.db.read() as conn:
            return " ".join(str(row[0]) for row in conn.execute(
                "SELECT client FROM mcp_oauth_clients").fetchall())


REDIRECT = "http://127.0.0.1:33418/callback"
VERIFIER = "v" * 50


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@pytest.fixture
def fronted(isolated_environment: Path, tmp_path: Path) -> Iterator[Fronted]:
    db = open_sqlite(tmp_path / "thoth.db", schemas=[AUDIT, SCHEMA])
    now = [1000.0]
    grants = OAuthGrants(db)
    slack = SlackSignIn(client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                        api_url="http://127.0.0.1:9", founders=frozenset(), bot=None)
    oauth = SlackOAuth(McpTokens(db, AuditLog(db)), grants, slack,
                       public_url="http://127.0.0.1")
    routes = create_auth_routes(
        oauth, AnyHttpUrl("http://127.0.0.1"),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
        revocation_options=RevocationOptions(enabled=True))
    front = OAuthFront(Starlette(routes=routes),
                       registrations=PerAddress(3, 3600.0, clock=lambda: now[0]),
                       authorizations=PerAddress(2, 60.0, clock=lambda: now[0]))
    server = WebServer(Starlette(routes=[Mount("", front)]), host="127.0.0.1", port=0)
    server.start()
    try:
        yield Fronted(f"http://127.0.0.1:{server.port}", db, grants, oauth, now)
    finally:
        server.stop()


def _register(fronted: Fronted, method: str, *, source: str = "127.0.0.1") -> httpx2.Response:
    with httpx2.Client(transport=httpx2.HTTPTransport(local_address=source),
                       timeout=30) as http:
        return http.post(fronted.base + "/register", json={
            "redirect_uris": [REDIRECT], "token_endpoint_auth_method": method,
            "client_name": "Claude Code"})


def test_the_metadata_lists_public_clients_and_a_public_client_gets_a_token(
    fronted: Fronted,
) -> None:
    metadata = httpx2.get(fronted.base + "/.well-known/oauth-authorization-server",
                          timeout=30)
    assert metadata.status_code == 200
    listed = metadata.json()
    assert listed["token_endpoint_auth_methods_supported"] == [
        "client_secret_post", "client_secret_basic", "none"]
    assert "none" in listed["revocation_endpoint_auth_methods_supported"]
    assert listed["registration_endpoint"] == "http://127.0.0.1/register"

    registered = _register(fronted, "none")
    assert registered.status_code == 201, registered.text
    client = registered.json()
    assert client["token_endpoint_auth_method"] == "none" and "client_secret" not in client
    token = fronted.exchange(client["client_id"], VERIFIER)
    assert token.status_code == 200, token.text
    assert token.json()["access_token"].startswith("thoth_")


@pytest.mark.parametrize("basic", [False, True], ids=["client_secret_post",
                                                      "client_secret_basic"])
def test_a_client_secret_is_kept_as_a_hash_and_still_authenticates(
    fronted: Fronted, basic: bool,
) -> None:
    method = "client_secret_basic" if basic else "client_secret_post"
    registered = _register(fronted, method)
    assert registered.status_code == 201, registered.text
    client_id, secret = registered.json()["client_id"], registered.json()["client_secret"]
    stored = fronted.stored_clients()
    assert client_id in stored and secret not in stored
    kept = json.loads(stored)["client_secret"]
    assert kept == "sha256:" + hashlib.sha256(secret.encode()).hexdigest()

    for wrong in ("not-the-secret", kept):  # the hash itself is no secret
        refused = fronted.exchange(client_id, VERIFIER, secret=wrong, basic=basic)
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert fronted.exchange(client_id, "w" * 50, basic=basic).status_code == 401
    token = fronted.exchange(client_id, "x" * 50, secret=secret, basic=basic)
    assert token.status_code == 200, token.text
    assert token.json()["refresh_token"]


def test_a_secret_kept_as_issued_before_still_works_and_is_hashed_when_read(
    fronted: Fronted,
) -> None:
    secret = "a" * 64
    legacy = OAuthClientInformationFull(
        client_id="old-client", client_secret=secret, redirect_uris=[AnyUrl(REDIRECT)],
        token_endpoint_auth_method="client_secret_post", grant_types=["authorization_code"])
    with fronted.db.write() as conn:
        conn.execute("INSERT INTO mcp_oauth_clients (client_id, client, registered_at)"
                     " VALUES (?, ?, ?)", ("old-client", legacy.model_dump_json(), 1.0))
    assert secret in fronted.stored_clients()

    token = fronted.exchange("old-client", VERIFIER, secret=secret)
    assert token.status_code == 200, token.text
    assert secret not in fronted.stored_clients()
    assert fronted.exchange("old-client", "x" * 50, secret=secret).status_code == 200


def test_registrations_and_authorizations_are_limited_per_address(fronted: Fronted) -> None:
    for _ in range(3):
        assert _register(fronted, "none").status_code == 201
    fronted.now[0] += 600
    refused = _register(fronted, "none")
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "3000"
    assert refused.json()["error"] == "temporarily_unavailable"
    assert "3000 seconds" in refused.json()["error_description"]
    # Another address is served; this one again once its hour is over.
    assert _register(fronted, "none", source="127.0.0.2").status_code == 201
    fronted.now[0] += 3000
    assert _register(fronted, "none").status_code == 201
    assert fronted.stored_clients().count('"client_id":') == 5

    def authorize() -> int:
        return httpx2.get(fronted.base + "/authorize", params={
            "client_id": "unknown", "response_type": "code"}, timeout=30).status_code

    assert [authorize() for _ in range(3)] == [400, 400, 429]
