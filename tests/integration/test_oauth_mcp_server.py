"""The loopback remote MCP server and its authorization server (tests/servers/oauth_mcp.py)
behave as the tests of Thoth's OAuth client assume: proved with the MCP SDK's own client
(``OAuthClientProvider``, a real Chromium clicking Allow) and with plain HTTP where a
test needs a request no well-behaved client would make."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from collections.abc import Iterator
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from tests.integration.test_mcp_oauth import Browser, ClientCallback, Kept, sdk_client
from tests.servers.oauth_mcp import MetadataAt, OAuthMcpServer

REDIRECT = "http://127.0.0.1:33418/callback"
VERIFIER = "v" * 50
OTHER_RESOURCE = "http://other.example/mcp"


class IssuerBrowser(Browser):
    """The shared browser, also handing the client the response's ``iss`` (RFC 9207):
    this server advertises it, so the SDK's client insists on it."""

    async def came_back(self) -> AuthorizationCodeResult:
        result = await super().came_back()
        iss = parse_qs(urlsplit(self.returned[-1]).query).get("iss", [None])[0]
        return result.model_copy(update={"iss": iss})


@pytest.fixture
def callback() -> Iterator[ClientCallback]:
    with ClientCallback() as listening:
        yield listening


def _client(server: OAuthMcpServer, browser: Browser, kept: Kept) -> OAuthClientProvider:
    return sdk_client(server.mcp_url, browser, kept)


async def _calls(server: OAuthMcpServer, auth: httpx2.Auth) -> list[str]:
    """whoami's and create_issue's answers, as text."""
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http, \
            streamable_http_client(server.mcp_url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        answers = [await session.call_tool("whoami", {}),
                   await session.call_tool("create_issue", {"title": "Broken build"})]
    texts = []
    for answer in answers:
        assert not answer.is_error, answer.content
        (content,) = answer.content
        assert isinstance(content, TextContent)
        texts.append(content.text)
    return texts


def _mcp_status(server: OAuthMcpServer, token: str) -> int:
    return httpx2.post(server.mcp_url, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json"},
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', timeout=30).status_code


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _consented(server: OAuthMcpServer, client_id: str, *, resource: str,
               decision: str = "allow") -> dict[str, str]:
    """What the browser brings back to the client after /authorize and the consent page."""
    with httpx2.Client(base_url=server.base, timeout=30) as http:
        sent = http.get("/authorize", params={
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "code_challenge": _challenge(VERIFIER), "code_challenge_method": "S256",
            "state": "st4te", "resource": resource})
        assert sent.status_code == 302, sent.text
        page = http.get(sent.headers["location"])
        assert page.status_code == 200, page.text
        found = re.search(r'name="request" value="([^"]+)"', page.text)
        assert found is not None, page.text
        back = http.post("/consent", data={"request": found.group(1), "decision": decision})
        assert back.status_code == 302, back.text
        location = back.headers["location"]
    assert location.startswith(REDIRECT + "?")
    return dict(parse_qsl(urlsplit(location).query))


def _register(server: OAuthMcpServer) -> str:
    registered = httpx2.post(server.base + "/register", json={
        "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
        "client_name": "Tester"}, timeout=30)
    assert registered.status_code == 201, registered.text
    return str(registered.json()["client_id"])


def _token(server: OAuthMcpServer, client_id: str, code: str, resource: str,
           **auth: str) -> httpx2.Response:
    return httpx2.post(server.base + "/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": client_id, "code_verifier": VERIFIER, "resource": resource, **auth},
        timeout=30)


@pytest.mark.parametrize("metadata_at", ["oauth", "openid"])
def test_two_people_connect_through_the_sdk_client_and_act_as_themselves(
    callback: ClientCallback, metadata_at: MetadataAt,
) -> None:
    with OAuthMcpServer(metadata_at=metadata_at) as server:
        server.signed_in_as = "alice"
        browser, kept = IssuerBrowser(callback), Kept()
        assert asyncio.run(_calls(server, _client(server, browser, kept))) == [
            "alice", "created: Broken build by alice"]
        (page,) = browser.pages
        assert "Allow Claude Code to act as alice?" in page

        server.signed_in_as = "bob"
        other, kept_bob = IssuerBrowser(callback), Kept()
        assert asyncio.run(_calls(server, _client(server, other, kept_bob))) == [
            "bob", "created: Broken build by bob"]

        assert kept.tokens is not None and kept_bob.tokens is not None
        assert kept.tokens.access_token in server.bearer_tokens_seen
        assert kept_bob.tokens.access_token in server.bearer_tokens_seen
        assert [request["client_name"] for request in server.registered] == [
            "Claude Code", "Claude Code"]
        for asked in server.authorize_requests:
            assert asked["code_challenge_method"] == "S256"
            assert asked["resource"] == server.mcp_url and asked["state"]
        for token_request in server.token_requests:
            assert token_request["grant_type"] == "authorization_code"
            assert token_request["has_code_verifier"]
            assert token_request["resource"] == server.mcp_url
        assert server.user_of(kept.tokens.access_token) == "alice"
        assert server.resource_of(kept.tokens.access_token) == server.mcp_url


def test_a_refresh_rotates_both_tokens_and_a_revoked_token_is_refused() -> None:
    with OAuthMcpServer() as server:
        client_id = _register(server)
        back = _consented(server, client_id, resource=server.mcp_url)
        assert back["state"] == "st4te" and back["iss"] == server.base
        first = _token(server, client_id, back["code"], server.mcp_url)
        assert first.status_code == 200, first.text
        tokens = first.json()
        assert tokens["expires_in"] == 3600 and tokens["refresh_token"]
        # A code works once.
        assert _token(server, client_id, back["code"], server.mcp_url).status_code == 400

        def refreshed(refresh: str) -> httpx2.Response:
            return httpx2.post(server.base + "/token", data={
                "grant_type": "refresh_token", "refresh_token": refresh,
                "client_id": client_id, "resource": server.mcp_url}, timeout=30)

        renewed = refreshed(tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        second = renewed.json()
        assert second["access_token"] != tokens["access_token"]
        assert _mcp_status(server, tokens["access_token"]) == 401
        assert _mcp_status(server, second["access_token"]) == 200
        assert refreshed(tokens["refresh_token"]).status_code == 400  # spent
        assert [request["grant_type"] for request in server.token_requests] == [
            "authorization_code", "authorization_code", "refresh_token", "refresh_token"]

        revoked = httpx2.post(server.base + "/revoke", data={
            "token": second["refresh_token"], "client_id": client_id}, timeout=30)
        assert revoked.status_code == 200, revoked.text
        assert server.revoked == [second["refresh_token"]]
        assert _mcp_status(server, second["access_token"]) == 401  # its pair went too


@pytest.mark.parametrize("pkce", [True, False])
def test_the_metadata_offers_s256_only_with_pkce(pkce: bool) -> None:
    with OAuthMcpServer(pkce=pkce) as server:
        metadata = httpx2.get(server.base + "/.well-known/oauth-authorization-server",
                              timeout=30).json()
    assert metadata["issuer"] == server.base
    if pkce:
        assert metadata["code_challenge_methods_supported"] == ["S256"]
    else:
        assert "code_challenge_methods_supported" not in metadata


def test_openid_discovery_is_the_only_metadata_when_asked() -> None:
    with OAuthMcpServer(metadata_at="openid", registration=False) as server:
        oauth = httpx2.get(server.base + "/.well-known/oauth-authorization-server", timeout=30)
        openid = httpx2.get(server.base + "/.well-known/openid-configuration", timeout=30)
        unregistered = httpx2.post(server.base + "/register", json={
            "redirect_uris": [REDIRECT]}, timeout=30)
    assert oauth.status_code == 404
    assert openid.status_code == 200
    document = openid.json()
    assert document["issuer"] == server.base
    assert document["authorization_endpoint"] == server.base + "/authorize"
    assert document["token_endpoint"] == server.base + "/token"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["jwks_uri"] and document["subject_types_supported"] == ["public"]
    assert "registration_endpoint" not in document
    assert unregistered.status_code in (404, 405)


def test_the_protected_resource_metadata_and_the_401_point_at_each_other() -> None:
    with OAuthMcpServer() as server:
        resource = httpx2.get(server.resource_metadata_url, timeout=30).json()
        refused = httpx2.post(server.mcp_url, content=b"{}", timeout=30)
    assert resource["resource"] == server.mcp_url
    assert resource["authorization_servers"] == [server.base]
    assert refused.status_code == 401
    assert (f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp"'
            in refused.headers["www-authenticate"])


def test_a_token_for_another_resource_is_refused_at_mcp() -> None:
    with OAuthMcpServer() as server:
        client_id = _register(server)
        elsewhere = _consented(server, client_id, resource=OTHER_RESOURCE)
        token = _token(server, client_id, elsewhere["code"], OTHER_RESOURCE)
        assert token.status_code == 200, token.text
        assert _mcp_status(server, token.json()["access_token"]) == 401
        assert server.resource_of(token.json()["access_token"]) == OTHER_RESOURCE
        # The resource asked at /token must be the one consented to.
        here = _consented(server, client_id, resource=server.mcp_url)
        switched = _token(server, client_id, here["code"], OTHER_RESOURCE)
        assert switched.status_code == 400 and switched.json()["error"] == "invalid_target"
        here = _consented(server, client_id, resource=server.mcp_url)
        token = _token(server, client_id, here["code"], server.mcp_url)
        assert _mcp_status(server, token.json()["access_token"]) == 200


def test_deny_and_a_pre_registered_client_with_basic_auth() -> None:
    with OAuthMcpServer(pre_registered={"thoth-app": "s3cret"}, registration=False) as server:
        denied = _consented(server, "thoth-app", resource=server.mcp_url, decision="deny")
        assert denied["error"] == "access_denied" and denied["state"] == "st4te"
        assert "code" not in denied
        back = _consented(server, "thoth-app", resource=server.mcp_url)
        # HTTP Basic, the client id not repeated in the form (RFC 6749 §2.3.1).
        token = httpx2.post(server.base + "/token", data={
            "grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT,
            "code_verifier": VERIFIER, "resource": server.mcp_url},
            auth=httpx2.BasicAuth("thoth-app", "s3cret"), timeout=30)
        assert token.status_code == 200, token.text
        assert server.token_requests[-1]["basic_auth"] is True
        wrong = _consented(server, "thoth-app", resource=server.mcp_url)
        refused = _token(server, "thoth-app", wrong["code"], server.mcp_url,
                         client_secret="not-it")
        assert refused.status_code == 401


def test_the_sdk_client_refuses_a_resource_that_is_not_the_server(
    callback: ClientCallback,
) -> None:
    with OAuthMcpServer(resource_override=OTHER_RESOURCE) as server:
        browser = IssuerBrowser(callback)
        with pytest.raises(BaseExceptionGroup) as refused:
            asyncio.run(_calls(server, _client(server, browser, Kept())))
        assert "does not match" in repr(refused.value.exceptions)
        assert not browser.pages and not server.authorize_requests


def test_a_short_lived_token_lapses_and_the_sdk_client_refreshes_it(
    callback: ClientCallback,
) -> None:
    # Long enough for a loaded CI machine to finish the first calls on the first token.
    with OAuthMcpServer(access_lifetime_s=5) as server:
        browser, kept = IssuerBrowser(callback), Kept()
        client = _client(server, browser, kept)  # one client: it knows when its token lapses

        async def twice() -> tuple[list[str], str, int, list[str]]:
            first = await _calls(server, client)
            assert kept.tokens is not None and kept.tokens.expires_in == 5
            lapsed = kept.tokens.access_token
            await asyncio.sleep(5.5)
            status = await asyncio.to_thread(_mcp_status, server, lapsed)
            return first, lapsed, status, await _calls(server, client)

        first, lapsed, status, second = asyncio.run(twice())
        assert first == second == ["alice", "created: Broken build by alice"]
        assert status == 401
        assert len(browser.pages) == 1  # no second consent: the refresh token did it
        assert [request["grant_type"] for request in server.token_requests] == [
            "authorization_code", "refresh_token"]
        assert kept.tokens is not None and kept.tokens.access_token != lapsed
