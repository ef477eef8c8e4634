"""Signing in to MCP over HTTP through OAuth, as MCP's authorization spec describes it,
with Slack as the identity provider: the SDK serves the authorization server's endpoints
(metadata, /register, /authorize, /token, /revoke) and asks this provider at each step.

The way through, for a client such as Claude Code:

1. The client registers itself (RFC 7591) and sends the browser to /authorize with PKCE.
2. ``authorize`` keeps that request and sends the browser on to Sign in with Slack.
3. Slack sends it back to ``/mcp/signin/slack/callback`` (``sign_in_pages.py``): the
   person is asked of Slack, and must be a full member of Thoth's workspace, as for the
   console (``SlackSignIn``).
4. A page asks the person whether this client may read their memory as them: Thoth signs
   in with one Slack app for every client, so Slack's own consent says nothing of which
   client asked (the confused deputy MCP's security notes warn of). Allow sends the
   browser back to the client with a one-time code.
5. The client exchanges the code (and its PKCE verifier) for a Thoth token of the
   person's (``McpTokens.signed_in``): it reads what their own token would, lapses in an
   hour, is renewed by its refresh token (while Slack still says they are a full
   member), and is listed and revocable with the others.

What stands before the SDK's routes (the rate limits on /register and /authorize, the
metadata's public clients, the presented client secret checked against its kept hash)
is ``oauth_front.py``.

Decided: offered only where CONSOLE_URL says where Thoth is reached (the issuer, and the
redirect Slack must know), with SLACK_CLIENT_ID and SLACK_CLIENT_SECRET set; otherwise a
person's token from /thoth token is the one way in.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from bridge.access.signed_in import SignedInPerson
from bridge.access.tokens import SIGNED_IN_TTL_S, McpToken, McpTokens
from bridge.mcp.oauth_front import PRESENTED
from bridge.mcp.oauth_grants import OAuthGrants, Stage
from bridge.slack_api.sign_in_with_slack import SlackSignIn
from layers.shared.errors import BadInput

# Long enough to sign in to Slack; short enough that a stray link soon means nothing.
SIGN_IN_TTL_S = 600.0
CODE_TTL_S = 300.0
ORIGIN = "mcp oauth"
SCOPE = "thoth:memory"
CALLBACK_PATH = "/mcp/signin/slack/callback"
MCP_PATH = "/mcp"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# Schemes a browser runs or reads rather than hands to an app.
NEVER_REDIRECT = frozenset({"javascript", "data", "file", "blob", "about", "vbscript",
                            "filesystem", "ftp", "ws", "wss"})
CONSENT_PATH = "/mcp/signin/consent"


class SlackOAuth:
    """The SDK's ``OAuthAuthorizationServerProvider``, whose identity provider is Slack."""

    def __init__(self, tokens: McpTokens, grants: OAuthGrants, slack: SlackSignIn, *,
                 public_url: str, clock: Callable[[], float] = time.time) -> None:
        self._tokens = tokens
        self._grants = grants
        self._slack = slack
        self._public_url = public_url.rstrip("/")
        self._resource = self._public_url + MCP_PATH
        self._clock = clock

    @property
    def callback_url(self) -> str:
        """Where Slack sends the browser back (a redirect URL of the Slack app)."""
        return self._public_url + CALLBACK_PATH

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        # Its secret is the presented one only if that one's hash is kept (oauth_front.py).
        return await anyio.to_thread.run_sync(self._grants.client, client_id,
                                              PRESENTED.get())

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            if redirect_origin(str(uri)) is None:
                raise RegistrationError(
                    "invalid_redirect_uri", f"{uri} is not where an MCP client listens:"
                    " http on this machine (127.0.0.1, localhost), https, or an app's own"
                    " scheme")
        # Kept as a hash where the front sets presented secrets aside (oauth_front.py).
        hashed = PRESENTED.get() is not None
        await anyio.to_thread.run_sync(lambda: self._grants.register(client_info,
                                                                     hashed=hashed))

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self._resource:
            raise AuthorizeError("invalid_target",
                                 f"this server's tokens are for {self._resource} only")
        url, state = self._slack.authorize_url(self.callback_url)
        await self._put("slack", state, {"client_id": client.client_id,
                                         "params": params.model_dump(mode="json")},
                        SIGN_IN_TTL_S)
        return url

    async def signed_in_with_slack(self, state: str, code: str) -> tuple[str, dict[str, Any]]:
        """Slack's redirect back: the person, asked of Slack, and the consent id their
        page carries (``BadInput`` when Slack refused, or they may not sign in)."""
        waiting = await anyio.to_thread.run_sync(self._grants.take, "slack", state)
        if waiting is None:
            raise LookupError("this sign-in link has lapsed or was used: start again from"
                              " your MCP client")
        person: SignedInPerson = await self._slack.complete(code, self.callback_url)
        consent = secrets.token_urlsafe(32)
        asked = {**waiting, "team": person.team, "user": person.user, "name": person.name}
        await self._put("consent", consent, asked, SIGN_IN_TTL_S)
        client = await self.get_client(str(waiting["client_id"]))
        return consent, {**asked, "client_name": _name_of(client)}

    async def decided(self, consent: str, allowed: bool) -> str:
        """Where the browser goes once the person chose: back to the client, with a code
        or with ``access_denied``."""
        asked = await anyio.to_thread.run_sync(self._grants.take, "consent", consent)
        if asked is None:
            raise LookupError("this sign-in has lapsed or was answered already: start"
                              " again from your MCP client")
        params = AuthorizationParams.model_validate(asked["params"])
        if not allowed:
            return construct_redirect_uri(str(params.redirect_uri), error="access_denied",
                                          error_description="the person said no",
                                          state=params.state)
        code = secrets.token_urlsafe(32)
        granted = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=self._clock() + CODE_TTL_S,
            client_id=str(asked["client_id"]), code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject=f"{asked['team']}:{asked['user']}")
        # Kept by its hash only, as every grant is: not inside its own record either.
        await self._put("code", code, granted.model_dump(mode="json", exclude={"code"}),
                        CODE_TTL_S)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        kept = await anyio.to_thread.run_sync(self._grants.peek, "code", authorization_code)
        if kept is None:
            await self._code_shown_again(authorization_code)
            return None
        if kept.get("client_id") != client.client_id:
            return None
        return AuthorizationCode.model_validate({**kept, "code": authorization_code})

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        taken = await anyio.to_thread.run_sync(self._grants.take, "code",
                                               authorization_code.code)
        if taken is None or authorization_code.subject is None:
            raise TokenError("invalid_grant", "this code was used already")
        team, _, user = authorization_code.subject.partition(":")
        signed_in = await anyio.to_thread.run_sync(lambda: self._tokens.signed_in(
            team, user, client_id=client.client_id or "", client_name=_name_of(client),
            origin=ORIGIN))
        await self._put("spent", authorization_code.code, {"token": signed_in.token.id},
                        CODE_TTL_S)
        return _oauth_token(signed_in.access, signed_in.refresh, authorization_code.scopes)

    async def _code_shown_again(self, code: str) -> None:
        """A code used once and shown again: someone else has it too, so what it gave
        is revoked (RFC 6749 4.1.2)."""
        spent = await anyio.to_thread.run_sync(self._grants.peek, "spent", code)
        if spent is None:
            return
        token = await anyio.to_thread.run_sync(self._tokens.get, str(spent["token"]))
        if token is not None:
            await anyio.to_thread.run_sync(lambda: self._tokens.revoke(
                token.id, by=token.made_by, origin="a code shown twice"))

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        token = await anyio.to_thread.run_sync(self._tokens.of_refresh, refresh_token,
                                               client.client_id or "")
        if token is None:
            return None
        return RefreshToken(token=refresh_token, client_id=client.client_id or "",
                            scopes=[SCOPE], subject=f"{token.team}:{token.user}")

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        team, _, user = (refresh_token.subject or "").partition(":")
        try:
            # A renewal asks Slack again: someone deactivated, or made a guest, stops here
            # within the hour, not at the refresh token's month.
            await self._slack.check_member(team, user)
        except BadInput as gone:
            raise TokenError("invalid_grant", str(gone)) from gone
        renewed = await anyio.to_thread.run_sync(self._tokens.refreshed_by,
                                                 refresh_token.token, client.client_id or "")
        if renewed is None:
            raise TokenError("invalid_grant", "this refresh token was used or revoked")
        return _oauth_token(renewed.access, renewed.refresh, scopes or [SCOPE])

    async def load_access_token(self, token: str) -> AccessToken | None:
        held = await anyio.to_thread.run_sync(self._tokens.holder, token)
        return None if held is None else access_of(token, held)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        held = await anyio.to_thread.run_sync(
            self._tokens.holder if isinstance(token, AccessToken) else
            (lambda secret: self._tokens.of_refresh(secret, token.client_id)), token.token)
        if held is not None:
            await anyio.to_thread.run_sync(lambda: self._tokens.revoke(
                held.id, by=held.made_by, origin=ORIGIN))

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "Thoth signs in with Slack only")

    async def _put(self, stage: Stage, key: str, payload: dict[str, Any],
                   ttl_s: float) -> None:
        await anyio.to_thread.run_sync(
            lambda: self._grants.put(stage, key, payload, ttl_s=ttl_s))


def access_of(secret: str, held: McpToken) -> AccessToken:
    """What the SDK's bearer check carries to the tools: whose token this is. A sign-in's
    is its OAuth client's (the SDK's /revoke revokes only the asking client's tokens)."""
    return AccessToken(token=secret, client_id=held.oauth_client or f"thoth-token:{held.id}",
                       scopes=[SCOPE], subject=f"{held.team}:{held.user}",
                       claims={"team": held.team, "user": held.user})


def redirect_origin(uri: str) -> str | None:
    """Where a client's redirect URI sends the browser, as the consent page names it and
    its form-action allows it; None for one no MCP client listens at (MCP's spec: a
    localhost URL or https; RFC 8252: a native app's own scheme), which would make Thoth
    an open redirector or send the code in clear over the network."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if parts.username is not None or parts.password is not None:
        return None  # https://claude.ai@evil.example reads as claude.ai
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    shown = f"[{host}]" if host and ":" in host else host  # an IPv6 address, as in a URL
    where = shown if port is None else f"{shown}:{port}"
    if scheme == "https" and host:
        return f"https://{where}"
    if scheme == "http" and host in LOOPBACK:
        return f"http://{where}"
    if scheme not in {"http", "https"} | NEVER_REDIRECT and re.fullmatch(
            r"[a-z][a-z0-9.+-]*", scheme):
        return f"{scheme}:"
    return None


def _oauth_token(access: str, refresh: str, scopes: list[str]) -> OAuthToken:
    return OAuthToken(access_token=access, token_type="Bearer", expires_in=SIGNED_IN_TTL_S,
                      refresh_token=refresh, scope=" ".join(scopes))


def _name_of(client: OAuthClientInformationFull | None) -> str:
    return (client.client_name if client is not None and client.client_name
            else "an MCP client")
