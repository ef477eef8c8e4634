"""MCP over streamable HTTP, for a team: `thoth serve` (HTTP mode) and `thoth console`
serve it at ``/mcp`` on their own port.

Who asks is the holder of the request's bearer token (``tokens.py``): one a person made
(/thoth token), or one an MCP client got by their signing in with Slack through OAuth
(``oauth.py``, where CONSOLE_URL and the Slack app's client id and secret are set). The
SDK's bearer middleware asks for the token's holder at every HTTP request, so a revoked
token is refused (401) at its very next request. Requests are stateless (no SDK session
to hijack or to lose to another replica): each is its own person's, by its own token.
The person's private channels and group DMs are asked of Slack at each call, kept a
minute (``SlackMemberships``, as the console does), and fail closed: when Slack cannot
say, none.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.access.tokens import McpTokens
from bridge.access.ways_in import mcp_signs_in
from bridge.app import Thoth
from bridge.mcp.asker import Asker
from bridge.mcp.oauth import (
    CALLBACK_PATH,
    CONSENT_PATH,
    MCP_PATH,
    SCOPE,
    SlackOAuth,
    access_of,
)
from bridge.mcp.oauth_front import OAuthFront
from bridge.mcp.oauth_grants import OAuthGrants
from bridge.mcp.opening import Opening
from bridge.mcp.server import mcp_server
from bridge.mcp.sign_in_pages import SignInPages
from bridge.messages import (
    TOKEN_HINT,
    TOKEN_HINT_SIGN_IN,
)
from bridge.slack_api.sign_in_with_slack import slack_sign_in
from bridge.web.server import Running

ORIGIN = "mcp http"


class ThothTokens:
    """The SDK's ``TokenVerifier`` where no one signs in through OAuth: a live token is
    its holder's access."""

    def __init__(self, tokens: McpTokens) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        held = await anyio.to_thread.run_sync(self._tokens.holder, token)
        return None if held is None else access_of(token, held)


def mcp_over_http(app: Thoth, *, host: str) -> tuple[Mount, Running]:
    """The route that serves /mcp (mounted last: it answers only its own path) and what
    must run while the server does (the SDK's session manager)."""
    settings = app.settings
    workspace_of, bot, memberships = app.slack.workspace_of, app.slack.client, app.slack.memberships

    async def asker_of_call() -> Asker:
        token = get_access_token()
        claims = (token.claims or {}) if token is not None else {}
        team, user = str(claims.get("team") or ""), str(claims.get("user") or "")
        if not (team and user):
            raise ToolError("no Thoth token with this request: make one with /thoth token"
                            " in a DM with Thoth")
        return Asker(team, user, await memberships.of(team, user))

    signing_in = (slack_sign_in(settings, bot, workspace_of) if mcp_signs_in(settings)
                  else None)
    if signing_in is not None and settings.console_url:
        oauth = SlackOAuth(app.mcp_tokens, OAuthGrants(app.db), signing_in,
                           public_url=settings.console_url)
        public = settings.console_url.rstrip("/")
        server = mcp_server(Opening.of(app), asker_of_call, origin=ORIGIN,
                            auth_server_provider=oauth,
                            auth=AuthSettings(
            issuer_url=AnyHttpUrl(public), resource_server_url=AnyHttpUrl(public + MCP_PATH),
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
            # This server is the only resource its tokens are for: every token, a
            # person's own or a sign-in's, is checked against Thoth's own table.
            validate_token_resource=False))
        pages = SignInPages(oauth)
        server.custom_route(CALLBACK_PATH, methods=["GET"])(pages.slack_callback)
        server.custom_route(CONSENT_PATH, methods=["POST"])(pages.consent)
    else:
        # Only where the resource metadata would point, which nothing serves: the token
        # is Thoth's own, made in Slack or the console.
        issuer = settings.console_url or f"http://{host}"
        server = mcp_server(
            Opening.of(app), asker_of_call, origin=ORIGIN,
            token_verifier=ThothTokens(app.mcp_tokens),
            auth=AuthSettings(issuer_url=AnyHttpUrl(issuer), resource_server_url=None,
                              required_scopes=[SCOPE]))
    # Each answer as one JSON body, not an SSE stream: recall's p50 over HTTP at 100k
    # episodes 9.4 -> 6.3 ms over the warm process (bench/mcp_recall.py). Thoth's tools
    # send no progress or server requests mid-call, which is what a stream is for.
    # Stateless: an SDK session lives in one process's memory, and behind the deployment's
    # proxy (deploy/Caddyfile: round robin over the replicas) a client's next request
    # lands on another replica. Every request carries its token and is checked anyway;
    # measured, no slower.
    served = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                        json_response=True, stateless_http=True)

    @asynccontextmanager
    async def sessions() -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    hint = TOKEN_HINT_SIGN_IN if signing_in is not None else TOKEN_HINT
    # Before the SDK's OAuth routes: their rate limits, the metadata, the client secret's
    # hash (``oauth_front.py``).
    fronted = served if signing_in is None else OAuthFront(served)
    return Mount("", SaysHowToGetAToken(fronted, hint)), sessions


class SaysHowToGetAToken:
    """The SDK's 401 (its ``RequireAuthMiddleware``) says only "Authentication required":
    a client, and the person reading its error, learn there how to get a token.

    Wraps the SDK's app rather than patching it: a 401 it sends keeps its status and its
    ``WWW-Authenticate`` parameters (``resource_metadata``, where OAuth is offered); only
    the ``error_description``, in the header and in the JSON body, is Thoth's.
    """

    def __init__(self, app: ASGIApp, hint: str) -> None:
        self._app = app
        self._hint = hint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Only /mcp's: the OAuth endpoints' 401s (/token, /revoke) are about a client's
        # own credentials, and say so themselves.
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            await self._app(scope, receive, send)
            return
        refused = answered = False

        async def hinted(message: Message) -> None:
            nonlocal refused, answered
            if message["type"] == "http.response.start" and message["status"] == 401:
                refused = True
                message = {**message, "headers": self._headers(message.get("headers", []))}
            elif message["type"] == "http.response.body" and refused:
                if answered:
                    return  # the SDK's body came in parts: ours went whole with the first
                answered = True
                message = {**message, "body": self._body(), "more_body": False}
            await send(message)

        await self._app(scope, receive, hinted)

    def _body(self) -> bytes:
        return json.dumps({"error": "invalid_token", "error_description": self._hint}).encode()

    def _headers(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        kept = [(name, value) for name, value in headers
                if name.lower() not in (b"content-length", b"www-authenticate")]
        challenge = next((value.decode() for name, value in headers
                          if name.lower() == b"www-authenticate"), "Bearer")
        # The SDK's own parameters after its description (resource_metadata), kept.
        others = [part for part in challenge.removeprefix("Bearer ").split(", ")
                  if part.startswith("resource_metadata=")]
        parts = ['error="invalid_token"', f'error_description="{self._hint}"', *others]
        return [*kept, (b"www-authenticate", f"Bearer {', '.join(parts)}".encode()),
                (b"content-length", str(len(self._body())).encode())]
