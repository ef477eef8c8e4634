"""A remote MCP server behind an OAuth authorization server, on loopback: what a person
connects their own account to (GitHub's, Linear's MCP server), for the tests of Thoth's
OAuth client. Built from the MCP SDK's own auth code, not from Thoth's: the SDK's
``create_auth_routes`` (/authorize, /token, /register, /revoke) over an in-memory
provider written here, the SDK's bearer middleware in front of an SDK ``MCPServer`` at
/mcp, and RFC 9728 protected resource metadata naming this server as the authorization
server.

The SDK's /authorize sends the browser to this server's consent page ("Allow CLIENT to
act as USER?", with Allow and Deny), where USER is whoever ``signed_in_as`` says is
signed in here. Allow sends the browser back to the client with a code, its ``state``
and ``iss`` (RFC 9207); Deny with ``error=access_denied``.

Options (constructor arguments) make the server one a client must refuse or handle
differently: no PKCE in its metadata, short-lived access tokens, pre-registered clients,
no dynamic registration, its metadata only as OpenID Connect discovery, protected
resource metadata naming another resource.

What the server was sent is kept for the tests' assertions (``bearer_tokens_seen``,
``token_requests``, ``authorize_requests``, ``revoked``, ``registered``).

Two leniences the SDK's handlers lack, so that a client following the RFCs is not
refused for the SDK's quirks: a client authenticating with HTTP Basic need not repeat
its ``client_id`` in the form (RFC 6749 §2.3.1), and a /revoke form need not carry a
``client_secret`` (a public client has none). A pre-registered client may authenticate
with either ``client_secret_post`` or ``client_secret_basic``, as the metadata says.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, unquote, urlencode

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    ProviderTokenVerifier,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, cors_middleware, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyHttpUrl, AnyUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.web.server import WebServer, lifespan_of
from layers.shared.errors import ConfigurationError

MetadataAt = Literal["oauth", "openid"]

SCOPE = "mcp"
MCP_PATH = "/mcp"
CONSENT_PATH = "/consent"
JWKS_PATH = "/jwks"
OAUTH_METADATA_PATH = "/.well-known/oauth-authorization-server"
OPENID_METADATA_PATH = "/.well-known/openid-configuration"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource" + MCP_PATH
CODE_LIFETIME_S = 300
REFRESH_LIFETIME_S = 30 * 24 * 3600
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
START_ATTEMPTS = 5

# The form of the /token request being answered, for the provider: the SDK hands it the
# code or refresh token but not the request's `resource` (RFC 8707), which must match.
_token_form: ContextVar[dict[str, str] | None] = ContextVar("token_form", default=None)
# Whether the request being answered authenticates its client with HTTP Basic.
_basic_auth: ContextVar[bool] = ContextVar("basic_auth", default=False)


class PreRegisteredClient(OAuthClientInformationFull):
    """A client the operator registered by hand, with its id and secret: its redirect
    URI is wherever the client listens on loopback (RFC 8252 §7.3: any port)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None:
            raise InvalidRedirectUriError("redirect_uri is required")
        if redirect_uri.scheme != "http" or redirect_uri.host not in LOOPBACK_HOSTS:
            raise InvalidRedirectUriError(f"Redirect URI '{redirect_uri}' is not on loopback")
        return redirect_uri


@dataclass
class Consent:
    """An authorization request waiting for the person's Allow or Deny."""
    client: OAuthClientInformationFull
    params: AuthorizationParams
    user: str | None = None  # who the page named (the one signed in when it was shown)


@dataclass
class Records:
    """What the server was sent, for the tests' assertions."""
    bearer_tokens_seen: list[str]
    token_requests: list[dict[str, Any]]
    authorize_requests: list[dict[str, str]]
    revoked: list[str]
    registered: list[dict[str, Any]]
    # How many /token requests to come are answered 503, as a server mid-deploy does.
    outage: list[int] = field(default_factory=lambda: [0])


class InMemoryProvider:
    """The SDK's ``OAuthAuthorizationServerProvider``, kept in memory: clients, pending
    consents, codes (one use), access tokens bound to a user and a resource, refresh
    tokens that rotate (a refresh replaces both tokens)."""

    def __init__(self, issuer: str, records: Records, *, access_lifetime_s: int,
                 pre_registered: dict[str, str]) -> None:
        self.issuer = issuer
        self._records = records
        self._access_lifetime_s = access_lifetime_s
        self.clients: dict[str, OAuthClientInformationFull] = {
            client_id: PreRegisteredClient(
                client_id=client_id, client_secret=secret, client_name=client_id,
                token_endpoint_auth_method="client_secret_post", scope=SCOPE,
                grant_types=["authorization_code", "refresh_token"])
            for client_id, secret in pre_registered.items()}
        self.consents: dict[str, Consent] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self._pair: dict[str, str] = {}  # access <-> refresh, both ways

    # Clients

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        client = self.clients.get(client_id)
        if isinstance(client, PreRegisteredClient) and _basic_auth.get():
            return client.model_copy(update={"token_endpoint_auth_method": "client_secret_basic"})
        return client

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    # Authorization: the consent page decides

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        request = secrets.token_urlsafe(16)
        self.consents[request] = Consent(client, params)
        return f"{self.issuer}{CONSENT_PATH}?{urlencode({'request': request})}"

    def decided(self, request: str, *, allowed: bool) -> str | None:
        """Where the browser goes after the person's decision (None: no such request)."""
        consent = self.consents.pop(request, None)
        if consent is None or consent.user is None:
            return None
        params = consent.params
        if not allowed:
            return construct_redirect_uri(
                str(params.redirect_uri), error="access_denied",
                error_description="the person denied access", state=params.state,
                iss=self.issuer)
        code = secrets.token_urlsafe(32)
        assert consent.client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + CODE_LIFETIME_S,
            client_id=consent.client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject=consent.user)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state,
                                      iss=self.issuer)

    # Tokens

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        _check_resource(authorization_code.resource)
        return self._issue(authorization_code.client_id, authorization_code.scopes,
                           authorization_code.resource, authorization_code.subject)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        _check_resource(refresh_token.resource)
        self._forget(refresh_token.token)  # rotation: the old pair is spent
        return self._issue(refresh_token.client_id, scopes, refresh_token.resource,
                           refresh_token.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self._records.revoked.append(token.token)
        self._forget(token.token)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        raise TokenError(error="unsupported_grant_type")

    def _issue(self, client_id: str, scopes: list[str], resource: str | None,
               subject: str | None) -> OAuthToken:
        access, refresh = "at_" + secrets.token_urlsafe(24), "rt_" + secrets.token_urlsafe(24)
        now = int(time.time())
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes,
            expires_at=now + self._access_lifetime_s, resource=resource, subject=subject,
            claims={"iss": self.issuer})
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes,
            expires_at=now + REFRESH_LIFETIME_S, resource=resource, subject=subject)
        self._pair[access], self._pair[refresh] = refresh, access
        return OAuthToken(access_token=access, expires_in=self._access_lifetime_s,
                          scope=" ".join(scopes) or None, refresh_token=refresh)

    def _forget(self, token: str) -> None:
        """A token and its pair: an access token's refresh token, and the other way."""
        for each in (token, self._pair.get(token, "")):
            self.access.pop(each, None)
            self.refresh.pop(each, None)
            self._pair.pop(each, None)


def _check_resource(granted: str | None) -> None:
    """RFC 8707 §2.2: a token request's `resource` must be one the grant was for."""
    form = _token_form.get() or {}
    asked = form.get("resource")
    if asked is not None and asked.rstrip("/") != (granted or "").rstrip("/"):
        raise TokenError(error="invalid_target",
                         error_description=f"resource {asked} was not authorized")


class Recording:
    """Keeps what the server is sent (``Records``) and smooths two SDK quirks (the
    module's docstring) before the SDK's handlers read a request."""

    def __init__(self, app: ASGIApp, records: Records) -> None:
        self._app = app
        self._records = records

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = {name.decode("latin-1").lower(): value.decode("latin-1")
                   for name, value in scope.get("headers", [])}
        authorization = headers.get("authorization", "")
        if path.rstrip("/") == MCP_PATH and authorization.lower().startswith("bearer "):
            self._records.bearer_tokens_seen.append(authorization[7:])
        if path == "/authorize":
            query = scope.get("query_string", b"").decode("latin-1")
            self._records.authorize_requests.append(dict(parse_qsl(query)))
        if scope["method"] != "POST" or path not in ("/token", "/revoke", "/register"):
            await self._app(scope, receive, send)
            return
        body = await _whole_body(receive)
        basic = authorization.lower().startswith("basic ")
        form: dict[str, str] | None = None
        if path == "/register":
            self._records.registered.append(_json_object(body))
        else:
            form = dict(parse_qsl(body.decode("latin-1"), keep_blank_values=True))
            body = self._smoothed(path, form, authorization, body)
        if path == "/token" and form is not None:
            self._records.token_requests.append({
                "grant_type": form.get("grant_type"), "resource": form.get("resource"),
                "client_id": form.get("client_id"), "scope": form.get("scope"),
                "has_code_verifier": bool(form.get("code_verifier")),
                "basic_auth": basic})
            if self._records.outage[0] > 0:
                self._records.outage[0] -= 1
                await send({"type": "http.response.start", "status": 503,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"down for a moment"})
                return
        scope = {**scope, "headers": [
            *((name, value) for name, value in scope.get("headers", [])
              if name.lower() != b"content-length"),
            (b"content-length", str(len(body)).encode())]}
        form_token, basic_token = _token_form.set(form), _basic_auth.set(basic)
        try:
            await self._app(scope, _replaying(body), send)
        finally:
            _token_form.reset(form_token)
            _basic_auth.reset(basic_token)

    @staticmethod
    def _smoothed(path: str, form: dict[str, str], authorization: str, body: bytes) -> bytes:
        changed = False
        if "client_id" not in form and authorization.lower().startswith("basic "):
            client_id = _basic_client_id(authorization)
            if client_id:
                form["client_id"], changed = client_id, True
        if path == "/revoke" and "client_secret" not in form:
            form["client_secret"], changed = "", True
        return urlencode(form).encode() if changed else body


def _basic_client_id(authorization: str) -> str | None:
    try:
        decoded = base64.b64decode(authorization[6:]).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote(decoded.split(":", 1)[0]) if ":" in decoded else None


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return {"unparsed": body.decode("utf-8", "replace")}
    return parsed if isinstance(parsed, dict) else {"unparsed": parsed}


async def _whole_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _replaying(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


class OAuthMcpServer:
    """The remote MCP server and its authorization server, on a free loopback port while
    used as a context manager (``base`` is its URL, the issuer; ``mcp_url`` is /mcp)."""

    def __init__(self, *, pkce: bool = True, access_lifetime_s: int = 3600,
                 pre_registered: dict[str, str] | None = None, registration: bool = True,
                 metadata_at: MetadataAt = "oauth",
                 resource_override: str | None = None) -> None:
        self.pkce = pkce
        self.access_lifetime_s = access_lifetime_s
        self.pre_registered = dict(pre_registered or {})
        self.registration = registration
        self.metadata_at: MetadataAt = metadata_at
        self.resource_override = resource_override
        # Who is signed in at this server, as the consent page names them (None: no one).
        self.signed_in_as: str | None = "alice"
        self.bearer_tokens_seen: list[str] = []
        self.token_requests: list[dict[str, Any]] = []
        self.authorize_requests: list[dict[str, str]] = []
        self.revoked: list[str] = []
        self.registered: list[dict[str, Any]] = []
        # Set ``outage[0]`` to answer that many /token requests with 503.
        self.outage = [0]
        self.base = ""
        self.provider: InMemoryProvider | None = None
        self._server: WebServer | None = None

    @property
    def mcp_url(self) -> str:
        return self.base + MCP_PATH

    @property
    def issuer(self) -> str:
        return self.base

    @property
    def resource_metadata_url(self) -> str:
        return self.base + RESOURCE_METADATA_PATH

    @property
    def metadata_url(self) -> str:
        return self.base + (OAUTH_METADATA_PATH if self.metadata_at == "oauth"
                            else OPENID_METADATA_PATH)

    def user_of(self, access_token: str) -> str | None:
        """Whom an access token was issued to (None: unknown, revoked or rotated away)."""
        held = self.provider.access.get(access_token) if self.provider else None
        return None if held is None else held.subject

    def resource_of(self, access_token: str) -> str | None:
        """The resource (RFC 8707) an access token was issued for."""
        held = self.provider.access.get(access_token) if self.provider else None
        return None if held is None else held.resource

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        # The issuer names the port, so the port is chosen before the app is made.
        for attempt in range(START_ATTEMPTS):
            port = _free_port()
            self.base = f"http://127.0.0.1:{port}"
            server = WebServer(self._app(), host="127.0.0.1", port=port)
            try:
                server.start()
            except ConfigurationError:
                if attempt == START_ATTEMPTS - 1:
                    raise
                continue
            self._server = server
            return

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    # The app

    def _app(self) -> Starlette:
        records = Records(self.bearer_tokens_seen, self.token_requests,
                          self.authorize_requests, self.revoked, self.registered, self.outage)
        provider = InMemoryProvider(self.base, records, access_lifetime_s=self.access_lifetime_s,
                                    pre_registered=self.pre_registered)
        self.provider = provider
        registration = ClientRegistrationOptions(enabled=self.registration,
                                                 valid_scopes=[SCOPE], default_scopes=[SCOPE])
        revocation = RevocationOptions(enabled=True)
        issuer = AnyHttpUrl(self.base)
        # The SDK's endpoints; its metadata route replaced by this server's own (below).
        sdk_routes = [route for route in create_auth_routes(
            provider, issuer, client_registration_options=registration,
            revocation_options=revocation) if route.path != OAUTH_METADATA_PATH]
        metadata = self._metadata(registration, revocation)
        # Validated from strings: the model keeps a path-less issuer as it is (no "/"
        # added), so a client compares it with the metadata's issuer as equal strings.
        resource = ProtectedResourceMetadata.model_validate({
            "resource": self.resource_override or self.mcp_url,
            "authorization_servers": [self.base], "scopes_supported": [SCOPE],
            "resource_name": "OAuth test MCP server"})
        mcp = self._mcp(provider)
        served = mcp.streamable_http_app(streamable_http_path=MCP_PATH, json_response=True,
                                         stateless_http=True, host="127.0.0.1")

        async def metadata_document(_: Request) -> Response:
            return JSONResponse(metadata, headers={"Cache-Control": "no-store"})

        async def jwks(_: Request) -> Response:
            return JSONResponse({"keys": []})

        metadata_path = (OAUTH_METADATA_PATH if self.metadata_at == "oauth"
                         else OPENID_METADATA_PATH)
        routes: list[BaseRoute] = [
            *sdk_routes,
            Route(metadata_path, endpoint=cors_middleware(metadata_document, ["GET", "OPTIONS"]),
                  methods=["GET", "OPTIONS"]),
            # Before the SDK app's own (which always names the URL it guards).
            Route(RESOURCE_METADATA_PATH, endpoint=cors_middleware(
                ProtectedResourceMetadataHandler(resource).handle, ["GET", "OPTIONS"]),
                  methods=["GET", "OPTIONS"]),
            Route(CONSENT_PATH, endpoint=self._consent_page, methods=["GET"]),
            Route(CONSENT_PATH, endpoint=self._consent_decided, methods=["POST"]),
            Route(JWKS_PATH, endpoint=jwks, methods=["GET"]),
            Mount("", served),
        ]

        @asynccontextmanager
        async def sessions() -> AsyncIterator[None]:
            async with mcp.session_manager.run():
                yield

        return Starlette(routes=routes, lifespan=lifespan_of(sessions),
                         middleware=[Middleware(Recording, records=records)])

    def _metadata(self, registration: ClientRegistrationOptions,
                  revocation: RevocationOptions) -> dict[str, Any]:
        """RFC 8414 metadata (the SDK's, issuer exactly this server's URL), or OpenID
        Connect discovery's shape of it."""
        built = build_metadata(AnyHttpUrl(self.base), None, registration, revocation)
        document: dict[str, Any] = built.model_dump(mode="json", exclude_none=True)
        document["issuer"] = self.base
        document["authorization_response_iss_parameter_supported"] = True
        # The SDK's token and revocation handlers take public clients too.
        document["token_endpoint_auth_methods_supported"] = [
            "client_secret_post", "client_secret_basic", "none"]
        if "revocation_endpoint" in document:
            document["revocation_endpoint_auth_methods_supported"] = [
                "client_secret_post", "client_secret_basic", "none"]
        if not self.pkce:
            document.pop("code_challenge_methods_supported", None)
        if self.metadata_at == "openid":
            document |= {"jwks_uri": self.base + JWKS_PATH,
                         "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": ["RS256"]}
        return document

    def _mcp(self, provider: InMemoryProvider) -> MCPServer:
        settings = AuthSettings.model_validate({
            "issuer_url": self.base, "resource_server_url": self.mcp_url,
            # The bearer middleware refuses a token issued for another resource.
            "validate_token_resource": True})
        mcp = MCPServer("oauth-test", token_verifier=ProviderTokenVerifier(provider),
                        auth=settings)

        @mcp.tool()
        def whoami() -> str:
            """Who the token was issued to."""
            return _user()

        @mcp.tool()
        def create_issue(title: str) -> str:
            """Create an issue, as the token's user."""
            return f"created: {title} by {_user()}"

        return mcp

    # The consent page

    async def _consent_page(self, request: Request) -> Response:
        provider = self.provider
        asked = request.query_params.get("request", "")
        consent = provider.consents.get(asked) if provider else None
        if consent is None:
            return HTMLResponse(_page("Unknown request", "<p>Start again from the app.</p>"),
                                status_code=400)
        consent.user = self.signed_in_as
        if consent.user is None:
            return HTMLResponse(_page("Not signed in", "<p>Sign in first.</p>"), status_code=401)
        client = html.escape(consent.client.client_name or consent.client.client_id or "")
        user = html.escape(consent.user)
        body = (f"<p>Allow {client} to act as {user}?</p>"
                f'<form method="post" action="{CONSENT_PATH}">'
                f'<input type="hidden" name="request" value="{html.escape(asked)}">'
                '<button type="submit" name="decision" value="allow">Allow</button> '
                '<button type="submit" name="decision" value="deny">Deny</button>'
                "</form>")
        return HTMLResponse(_page("Allow access", body), headers={"Cache-Control": "no-store"})

    async def _consent_decided(self, request: Request) -> Response:
        form = await request.form()
        asked, decision = str(form.get("request", "")), str(form.get("decision", ""))
        back = self.provider.decided(asked, allowed=decision == "allow") if self.provider \
            else None
        if back is None:
            return HTMLResponse(_page("Unknown request", "<p>Start again from the app.</p>"),
                                status_code=400)
        return RedirectResponse(back, status_code=302, headers={"Cache-Control": "no-store"})


def _user() -> str:
    token = get_access_token()
    return (token.subject or "") if token is not None else ""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
