"""The client side of MCP's authorization for one person and one server: the link that
begins a sign-in, the code exchanged when the browser comes back, the token kept fresh,
and revoked when the person disconnects.

- Thoth is known to the authorization server by the client id the operator gives in
  ``mcp.json`` (``oauth.clientId``, and ``clientSecret`` if it has one), else by one it
  registers itself (RFC 7591) once per server and keeps.
- Every sign-in has its own PKCE verifier (S256) and ``state``; the ``resource``
  parameter (RFC 8707) names the server in both the authorization and token requests.
- A token is sent only to its own server (``bearer.py`` checks the address of every
  request) and to the token and revocation endpoints found with it.
- A token is refreshed a minute before it lapses. A refresh the server refuses ends the
  connection (the person is asked to connect again), unless another replica renewed it
  a moment before: rotating refresh tokens are used once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote_plus, urlencode

import httpx2
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, ValidationError

from bridge.connections.discovery import (
    ConnectRefused,
    Discovered,
    discover,
    error_of,
    must_be_safe,
)
from bridge.connections.store import START_LIFETIME_S, ConnectionStore, Registration, Start, Tokens
from layers.shared.offloaded import Offloaded

# A token this close to lapsing is renewed before it is used.
RENEW_BEFORE_S = 60.0
HTTP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class RemoteServer:
    """One server of ``mcp.json`` people sign in to (``"auth": "oauth"``)."""

    name: str
    url: str
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None


# Where the console takes the browser's return from a sign-in (``CONSOLE_URL`` before it):
# the address registered with each authorization server.
CALLBACK_PATH = "/console/connections/callback"


def connect_callback(console_url: str) -> str:
    return console_url.rstrip("/") + CALLBACK_PATH


def _http() -> httpx2.AsyncClient:
    # No redirects followed: a token request answered with a redirect is a failure, not
    # a reason to send the code somewhere else.
    return httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S, follow_redirects=False)


class Connector:
    """Sign-ins to the team's remote servers, for whoever asks."""

    def __init__(self, servers: dict[str, RemoteServer], store: Offloaded[ConnectionStore],
                 redirect_uri: str, *, http: Callable[[], httpx2.AsyncClient] = _http) -> None:
        """``redirect_uri``: where browsers come back (the console's callback)."""
        self.servers = servers
        self.store = store
        self.redirect_uri = redirect_uri
        self._http = http
        # One renewal at a time per connection, per event loop (a lock belongs to one:
        # the console and Slack may each run their own in one process).
        self._renewing: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str, str], asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def server(self, name: str) -> RemoteServer:
        found = self.servers.get(name)
        if found is None:
            raise ConnectRefused(f"{name} is not a server people connect to (in mcp.json"
                                 ' with "auth": "oauth")')
        return found

    async def start(self, team: str, user: str, name: str, ask_id: str | None = None) -> str:
        """The address to send the person's browser to, to sign in to ``name``."""
        server = self.server(name)
        async with self._http() as http:
            found = await discover(http, server.url, name)
            registration = await self._registration(http, server, found)
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        await self.store.run(lambda store: store.begin(Start(
            state, team, user, name, ask_id, pkce.code_verifier, registration.client_id,
            found.issuer, found.resource, found.token_endpoint, found.revocation_endpoint,
            self.redirect_uri, time.time() + START_LIFETIME_S)))
        query = {"response_type": "code", "client_id": registration.client_id,
                 "redirect_uri": self.redirect_uri, "state": state,
                 "code_challenge": pkce.code_challenge, "code_challenge_method": "S256",
                 "resource": found.resource}
        scope = server.scope or found.scope
        if scope:
            query["scope"] = scope
        separator = "&" if "?" in found.authorization_endpoint else "?"
        return f"{found.authorization_endpoint}{separator}{urlencode(query)}"

    async def finish(self, state: str, *, code: str | None, error: str | None,
                     issuer: str | None, team: str, user: str) -> Start:
        """Take the browser's return: the sign-in it ends, its tokens kept; else
        ``ConnectRefused`` saying why (nothing kept)."""
        start = await self.store.run(lambda store: store.take_start(state))
        if start is None:
            raise ConnectRefused("this sign-in is not one Thoth began, or it was used"
                                 " already: start again from the link in Slack")
        if start.expires_at < time.time():
            raise ConnectRefused("this sign-in took longer than 15 minutes: start again")
        if (start.team, start.user) != (team, user):
            raise ConnectRefused("this sign-in was begun by someone else: each person"
                                 " connects their own account")
        if error:
            raise ConnectRefused(f"{start.server} said no ({error[:200]}): nothing was"
                                 " connected")
        if issuer is not None and issuer.rstrip("/") != start.issuer.rstrip("/"):
            # RFC 9207: the answer came from another authorization server than asked.
            raise ConnectRefused(f"the sign-in came back from {issuer}, not {start.issuer}:"
                                 " refused")
        if not code:
            raise ConnectRefused(f"{start.server} sent no code back: nothing was connected")
        registration = await self._known_registration(start)
        tokens = await self._token_request(start.server, start.token_endpoint, registration, {
            "grant_type": "authorization_code", "code": code,
            "redirect_uri": start.redirect_uri, "code_verifier": start.verifier,
            "resource": start.resource})
        await self.store.run(lambda store: store.connect(start, tokens))
        return start

    async def access_token(self, team: str, user: str, name: str) -> str | None:
        """The person's token for ``name``, renewed if it is about to lapse; None when they
        are not connected (or no longer: the server refused to renew it)."""
        async with self._renewal(team, user, name):
            tokens = await self.store.run(lambda store: store.tokens(team, user, name))
            if tokens is None:
                return None
            if tokens.expires_at is None or tokens.expires_at - time.time() > RENEW_BEFORE_S:
                return tokens.access
            return await self._renewed(team, user, name, tokens)

    async def renew(self, team: str, user: str, name: str) -> str | None:
        """Renew now (the server refused the token it has): the new token, or None."""
        async with self._renewal(team, user, name):
            tokens = await self.store.run(lambda store: store.tokens(team, user, name))
            return None if tokens is None else await self._renewed(team, user, name, tokens)

    def _renewal(self, team: str, user: str, name: str) -> asyncio.Lock:
        locks = self._renewing.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault((team, user, name), asyncio.Lock())

    async def disconnect(self, team: str, user: str, name: str) -> bool:
        """End the person's connection: revoked at the server where it offers that, and
        deleted either way; whether there was one."""
        connection = await self.store.run(lambda store: store.get(team, user, name))
        if connection is None:
            return False
        tokens = await self.store.run(lambda store: store.tokens(team, user, name))
        if tokens is not None and connection.revocation_endpoint:
            registration = await self.store.run(lambda store: store.registration(
                name, connection.issuer, self.redirect_uri))
            client = registration or Registration(connection.client_id, None, "none")
            # The refresh token first: revoking it ends the grant at most servers.
            for token, hint in ((tokens.refresh, "refresh_token"),
                                (tokens.access, "access_token")):
                if token:
                    await self._revoke(connection.revocation_endpoint, client, token, hint)
        return bool(await self.store.run(lambda store: store.remove(team, user, name)))

    async def disconnect_all(self, team: str, user: str | None = None) -> int:
        """Every connection of a person (``user``) or of a workspace; how many."""
        connections = await self.store.run(
            lambda store: store.of_person(team, user) if user is not None
            else store.of_workspace(team))
        ended = 0
        for connection in connections:
            ended += await self.disconnect(connection.team, connection.user, connection.server)
        return ended

    async def _renewed(self, team: str, user: str, name: str, tokens: Tokens) -> str | None:
        connection = await self.store.run(lambda store: store.get(team, user, name))
        if connection is None or not tokens.refresh:
            await self.store.run(lambda store: store.remove(team, user, name))
            return None
        registration = await self.store.run(lambda store: store.registration(
            name, connection.issuer, self.redirect_uri)) or Registration(
                connection.client_id, None, "none")
        server = self.servers.get(name)
        if server is not None and server.client_id == connection.client_id:
            registration = _given(server)
        try:
            renewed = await self._token_request(name, connection.token_endpoint, registration, {
                "grant_type": "refresh_token", "refresh_token": tokens.refresh,
                "resource": connection.resource})
        except ConnectRefused:
            now = await self.store.run(lambda store: store.tokens(team, user, name))
            if now is not None and now.refresh != tokens.refresh:
                return now.access  # another replica renewed it first
            await self.store.run(lambda store: store.remove(team, user, name))
            return None
        # A server that does not rotate refresh tokens keeps the one it gave.
        kept = Tokens(renewed.access, renewed.refresh or tokens.refresh, renewed.scope,
                      renewed.expires_at)
        await self.store.run(lambda store: store.renewed(team, user, name, kept))
        return kept.access

    async def _registration(self, http: httpx2.AsyncClient, server: RemoteServer,
                            found: Discovered) -> Registration:
        if server.client_id:
            return _given(server)
        kept = await self.store.run(lambda store: store.registration(
            server.name, found.issuer, self.redirect_uri))
        if kept is not None:
            return kept
        if found.registration_endpoint is None:
            raise ConnectRefused(
                f"{server.name}'s sign-in takes no registration: give Thoth's client id in"
                f' mcp.json ("oauth": {{"clientId": ...}}), registered there with the'
                f" address {self.redirect_uri}")
        metadata = OAuthClientMetadata(
            client_name="Thoth", redirect_uris=[AnyUrl(self.redirect_uri)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="client_secret_post")
        try:
            answer = await http.post(found.registration_endpoint, json=metadata.model_dump(
                by_alias=True, mode="json", exclude_none=True))
        except httpx2.HTTPError as error:
            raise ConnectRefused(f"{server.name} could not register Thoth ({error})") from error
        if answer.status_code not in (200, 201):
            raise ConnectRefused(f"{server.name} refused to register Thoth"
                                 f" ({error_of(answer)})")
        try:
            info = OAuthClientInformationFull.model_validate_json(answer.content)
        except ValidationError as error:
            raise ConnectRefused(f"{server.name} registered Thoth in a shape it cannot"
                                 " read") from error
        if not info.client_id:
            raise ConnectRefused(f"{server.name} registered Thoth without a client id")
        registered = Registration(info.client_id, info.client_secret,
                                  info.token_endpoint_auth_method
                                  or ("client_secret_post" if info.client_secret else "none"))
        await self.store.run(lambda store: store.register(
            server.name, found.issuer, self.redirect_uri, registered))
        return registered

    async def _known_registration(self, start: Start) -> Registration:
        server = self.servers.get(start.server)
        if server is not None and server.client_id == start.client_id:
            return _given(server)
        kept = await self.store.run(lambda store: store.registration(
            start.server, start.issuer, start.redirect_uri))
        return kept if kept is not None and kept.client_id == start.client_id else (
            Registration(start.client_id, None, "none"))

    async def _token_request(self, name: str, endpoint: str, client: Registration,
                             form: dict[str, str]) -> Tokens:
        must_be_safe(endpoint, name)
        body = {**form, "client_id": client.client_id}
        headers = {"Accept": "application/json"}
        if client.client_secret and client.auth_method == "client_secret_basic":
            # RFC 6749 2.3.1: each part form-encoded before it is joined.
            pair = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret)}"
            headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        elif client.client_secret:
            body["client_secret"] = client.client_secret
        async with self._http() as http:
            try:
                answer = await http.post(endpoint, data=body, headers=headers)
            except httpx2.HTTPError as error:
                raise ConnectRefused(f"{name}'s sign-in could not be reached") from error
        if answer.status_code != 200:
            raise ConnectRefused(f"{name} refused the sign-in ({error_of(answer)})")
        try:
            token = OAuthToken.model_validate_json(answer.content)
        except ValidationError as error:
            raise ConnectRefused(f"{name} answered the sign-in in a shape Thoth cannot"
                                 " read") from error
        lapses = None if token.expires_in is None else time.time() + token.expires_in
        return Tokens(token.access_token, token.refresh_token, token.scope, lapses)

    async def _revoke(self, endpoint: str, client: Registration, token: str,
                      hint: str) -> None:
        body = {"token": token, "token_type_hint": hint, "client_id": client.client_id}
        if client.client_secret:
            body["client_secret"] = client.client_secret
        async with self._http() as http:
            # RFC 7009: 200 whatever it did; unreachable, the row goes anyway.
            with contextlib.suppress(httpx2.HTTPError):
                await http.post(endpoint, data=body)


def _given(server: RemoteServer) -> Registration:
    assert server.client_id is not None
    return Registration(server.client_id, server.client_secret,
                        "client_secret_post" if server.client_secret else "none")
