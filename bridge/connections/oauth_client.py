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
import logging
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
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
from bridge.connections.store import (
    START_LIFETIME_S,
    Connection,
    ConnectionStore,
    Registration,
    Start,
    Tokens,
)
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

# A token this close to lapsing is renewed before it is used.
RENEW_BEFORE_S = 60.0
# How long one process may hold a renewal before another may take it over (it died), and
# how often a process waiting on another's renewal looks for the token it kept.
RENEWAL_HOLD_S = 30.0
RENEWAL_LOOK_S = 0.2
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
                 redirect_uri: str, *, http: Callable[[], httpx2.AsyncClient] = _http,
                 audit: Offloaded[AuditLog] | None = None) -> None:
        """``redirect_uri``: where browsers come back (the console's callback);
        ``audit``: where each disconnection is written, whoever ends it."""
        self.servers = servers
        self.store = store
        self.redirect_uri = redirect_uri
        self._http = http
        self._audit = audit
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
        begun_by = await self.store.run(lambda store: store.begun_by(state))
        if begun_by is not None and begun_by != (team, user):
            # Left waiting: someone else's return does not use up the person's sign-in.
            raise ConnectRefused("this sign-in was begun by someone else: each person"
                                 " connects their own account")
        start = await self.store.run(lambda store: store.take_start(state, team, user))
        if start is None:
            raise ConnectRefused("this sign-in is not one Thoth began, or it was used"
                                 " already: start again from the link in Slack")
        if start.expires_at < time.time():
            raise ConnectRefused("this sign-in took longer than 15 minutes: start again")
        if error:
            raise ConnectRefused(f"{start.server} said no ({error[:200]}): nothing was"
                                 " connected")
        if issuer is not None and issuer.rstrip("/") != start.issuer.rstrip("/"):
            # RFC 9207: the answer came from another authorization server than asked.
            raise ConnectRefused(f"the sign-in came back from {issuer}, not {start.issuer}:"
                                 " refused")
        if not code:
            raise ConnectRefused(f"{start.server} sent no code back: nothing was connected")
        registration = await self._client_for(start.server, start.issuer, start.client_id)
        tokens = await self._token_request(start.server, start.token_endpoint, registration, {
            "grant_type": "authorization_code", "code": code,
            "redirect_uri": start.redirect_uri, "code_verifier": start.verifier,
            "resource": start.resource})
        await self.store.run(lambda store: store.connect(start, tokens))
        return start

    async def access_token(self, team: str, user: str, name: str) -> str | None:
        """The person's token for ``name``, renewed if it is about to lapse; None when they
        are not connected (or no longer: the server refused to renew it).
        ``ConnectRefused`` (not ``lasting``) when it lapsed and could not be renewed now."""
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
            if tokens is None:
                return None
            return await self._renewed(team, user, name, replace(tokens, expires_at=0.0))

    def _renewal(self, team: str, user: str, name: str) -> asyncio.Lock:
        locks = self._renewing.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault((team, user, name), asyncio.Lock())

    async def disconnect(self, team: str, user: str, name: str, *, actor: str,
                         origin: str) -> bool:
        """End the person's connection: revoked at the server where it offers that, and
        deleted either way, audited as ``actor`` from ``origin``; whether there was one."""
        connection = await self.store.run(lambda store: store.get(team, user, name))
        if connection is None:
            return False
        tokens = await self.store.run(lambda store: store.tokens(team, user, name))
        confirmed = connection.revocation_endpoint is None
        if tokens is not None and connection.revocation_endpoint:
            client = await self._client_for(name, connection.issuer, connection.client_id)
            # The refresh token first: revoking it ends the grant at most servers.
            confirmed = all([await self._revoke(name, connection.revocation_endpoint, client,
                                                token, hint)
                             for token, hint in ((tokens.refresh, "refresh_token"),
                                                 (tokens.access, "access_token")) if token])
        removed = bool(await self.store.run(lambda store: store.remove(team, user, name)))
        if self._audit is not None and removed:
            how = ("revoked at the server and deleted" if connection.revocation_endpoint
                   and confirmed else "deleted (the server did not confirm its revocation)"
                   if connection.revocation_endpoint else "deleted (the server revokes none)")
            await self._audit.run(lambda audit: audit.record(
                actor=actor, action="connection.disconnect", target=name, origin=origin,
                detail=f"{team}:{user}'s own account; its token {how}"))
        return removed

    async def disconnect_all(self, team: str | None, user: str | None = None, *,
                             actor: str, origin: str) -> int:
        """Every connection of a person (``user``: in ``team``, or in every workspace when
        ``team`` is None) or of a workspace; how many."""
        def found(store: ConnectionStore) -> list[Connection]:
            if user is None:
                return store.of_workspace(team) if team is not None else []
            return store.of_person(team, user) if team is not None else store.of_user(user)

        ended = 0
        for connection in await self.store.run(found):
            ended += await self.disconnect(connection.team, connection.user, connection.server,
                                           actor=actor, origin=origin)
        return ended

    async def _renewed(self, team: str, user: str, name: str, tokens: Tokens) -> str | None:
        connection = await self.store.run(lambda store: store.get(team, user, name))
        if connection is None or not tokens.refresh:
            await self.store.run(lambda store: store.remove(team, user, name))
            return None
        # One replica renews; the others wait for what it keeps (a rotating refresh token
        # spent twice ends the grant at servers that watch for reuse).
        held = await self.store.run(lambda store: store.hold_renewal(
            team, user, name, time.time() + RENEWAL_HOLD_S))
        if not held:
            return await self._renewed_elsewhere(team, user, name, tokens)
        client = await self._client_for(name, connection.issuer, connection.client_id)
        try:
            renewed = await self._token_request(name, connection.token_endpoint, client, {
                "grant_type": "refresh_token", "refresh_token": tokens.refresh,
                "resource": connection.resource})
        except ConnectRefused as refused:
            if refused.lasting:
                await self.store.run(lambda store: store.remove(team, user, name))
                return None
            await self.store.run(lambda store: store.let_go(team, user, name))
            if tokens.expires_at is not None and tokens.expires_at > time.time():
                return tokens.access  # still good for a moment: renewed at a later use
            raise
        # A server that does not rotate refresh tokens keeps the one it gave.
        kept = Tokens(renewed.access, renewed.refresh or tokens.refresh, renewed.scope,
                      renewed.expires_at)
        await self.store.run(lambda store: store.renewed(team, user, name, kept))
        return kept.access

    async def _renewed_elsewhere(self, team: str, user: str, name: str,
                                 tokens: Tokens) -> str | None:
        """The token another process is renewing, once it has kept it."""
        waited_until = time.monotonic() + RENEWAL_HOLD_S
        while time.monotonic() < waited_until:
            await asyncio.sleep(RENEWAL_LOOK_S)
            now = await self.store.run(lambda store: store.tokens(team, user, name))
            if now is None or now.refresh != tokens.refresh or now.access != tokens.access:
                return None if now is None else now.access
        raise ConnectRefused(f"{name}'s token is being renewed elsewhere and was not ready in"
                             f" {RENEWAL_HOLD_S:g} s", lasting=False)

    async def _client_for(self, name: str, issuer: str, client_id: str) -> Registration:
        """How Thoth authenticates as the client a connection was made with: the operator's
        client from mcp.json, else the one Thoth registered, else a public client."""
        server = self.servers.get(name)
        if server is not None and server.client_id == client_id:
            return _given(server)
        kept = await self.store.run(lambda store: store.registration(
            name, issuer, self.redirect_uri))
        return kept if kept is not None and kept.client_id == client_id else (
            Registration(client_id, None, "none"))

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

    async def _token_request(self, name: str, endpoint: str, client: Registration,
                             form: dict[str, str]) -> Tokens:
        must_be_safe(endpoint, name)
        body, headers = _authenticated(client, {**form, "client_id": client.client_id})
        async with self._http() as http:
            try:
                answer = await http.post(endpoint, data=body, headers=headers)
            except httpx2.HTTPError as error:
                raise ConnectRefused(f"{name}'s sign-in could not be reached",
                                     lasting=False) from error
        if answer.status_code != 200:
            # Only the grant or the client refused is lasting (RFC 6749 5.2); a server
            # that cannot answer now (5xx, 429, a gateway's page) may tomorrow.
            lasting = answer.status_code in (400, 401) and _error_code(answer) in LASTING
            raise ConnectRefused(f"{name} refused the sign-in ({error_of(answer)})",
                                 lasting=lasting)
        try:
            token = OAuthToken.model_validate_json(answer.content)
        except ValidationError as error:
            raise ConnectRefused(f"{name} answered the sign-in in a shape Thoth cannot"
                                 " read") from error
        lapses = None if token.expires_in is None else time.time() + token.expires_in
        return Tokens(token.access_token, token.refresh_token, token.scope, lapses)

    async def _revoke(self, name: str, endpoint: str, client: Registration, token: str,
                      hint: str) -> bool:
        """Whether the server said it revoked ``token`` (RFC 7009: 200, whatever it did);
        the row goes either way."""
        body, headers = _authenticated(client, {"token": token, "token_type_hint": hint,
                                                "client_id": client.client_id})
        async with self._http() as http:
            try:
                answer = await http.post(endpoint, data=body, headers=headers)
            except httpx2.HTTPError as error:
                log.warning("%s's revocation could not be reached: %s", name,
                            type(error).__name__)
                return False
        if answer.status_code != 200:
            log.warning("%s did not revoke a %s: %s", name, hint, error_of(answer))
        return answer.status_code == 200


# The token endpoint's refusals that end a grant: the person must connect again.
LASTING = frozenset({"invalid_grant", "invalid_client", "unauthorized_client"})


def _error_code(answer: httpx2.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return ""
    return str(body.get("error") or "") if isinstance(body, dict) else ""


def _authenticated(client: Registration, body: dict[str, str],
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """A token or revocation request's form and headers, the client authenticated as it
    registered: HTTP Basic, its secret in the form, or (a public client) its id alone."""
    headers = {"Accept": "application/json"}
    if client.client_secret and client.auth_method == "client_secret_basic":
        # RFC 6749 2.3.1: each part form-encoded before it is joined.
        pair = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret)}"
        headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
    elif client.client_secret:
        body = {**body, "client_secret": client.client_secret}
    return body, headers


def _given(server: RemoteServer) -> Registration:
    assert server.client_id is not None
    return Registration(server.client_id, server.client_secret,
                        "client_secret_post" if server.client_secret else "none")
