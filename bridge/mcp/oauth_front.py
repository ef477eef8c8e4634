"""What stands before the SDK's authorization-server routes (``oauth.py``), as an ASGI
wrapper of the app that serves them, since the SDK builds those routes itself and takes
no option for any of this:

- ``/register`` and ``/authorize`` are rate-limited per client address (429, Retry-After,
  an OAuth error body): registering is free and every registration is a row kept.
- The metadata lists ``none`` among the token endpoint's client authentications: the
  SDK's registration hands out such public clients (what Claude Code registers as), but
  its metadata names only the secret-based methods.
- At ``/token`` and ``/revoke``, the client secret the request presents is set aside
  (``PRESENTED``) for ``SlackOAuth.get_client``: the database keeps only a hash of each
  client's secret, and the SDK compares the secret it is given by ``get_client`` with the
  one presented, as issued (``mcp/server/auth/middleware/client_auth.py``), so
  ``get_client`` hands back the presented secret when its hash is the one kept.
"""

from __future__ import annotations

import base64
import binascii
import json
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl, unquote

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.mcp.rate_limit import PerAddress
from bridge.messages import MCP_OAUTH_TOO_MANY

METADATA_PATH = "/.well-known/oauth-authorization-server"
REGISTER_PATH, AUTHORIZE_PATH = "/register", "/authorize"
CLIENT_AUTHENTICATING = frozenset({"/token", "/revoke"})
# An MCP client registers once per machine it runs on, and a person signs in a few times
# a day: 20 registrations an hour from one address is a whole office setting up at once,
# and 60 authorizations a minute a browser tab that reloads; past either, a script.
REGISTRATIONS_PER_HOUR = 20
AUTHORIZATIONS_PER_MINUTE = 60

# The secrets the request being served presents (the Basic header's, the form's): none
# outside /token and /revoke; None where this front is not mounted, and then secrets are
# kept as issued, as before it was (``oauth_grants.py``). A context variable, as the
# SDK's own authenticated user is (auth_context.py): the SDK asks the provider for the
# client by its id alone.
PRESENTED: ContextVar[frozenset[str] | None] = ContextVar("presented_client_secret",
                                                          default=None)


class OAuthFront:
    """The SDK's OAuth routes (and whatever else ``app`` serves), behind the rate limits,
    with the metadata corrected and the presented client secret set aside."""

    def __init__(self, app: ASGIApp, *, registrations: PerAddress | None = None,
                 authorizations: PerAddress | None = None) -> None:
        self._app = app
        self._limits = {
            REGISTER_PATH: (registrations or PerAddress(REGISTRATIONS_PER_HOUR, 3600.0),
                            "registrations"),
            AUTHORIZE_PATH: (authorizations or PerAddress(AUTHORIZATIONS_PER_MINUTE, 60.0),
                             "sign-ins"),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        limited = self._limits.get(path)
        if limited is not None and method != "OPTIONS":
            limit, what = limited
            wait_s = limit.knock(_address(scope))
            if wait_s:
                await _too_many(send, what, wait_s)
                return
        if path in CLIENT_AUTHENTICATING and method == "POST":
            await self._presenting(scope, receive, send)
            return
        token = PRESENTED.set(frozenset())
        try:
            await self._app(scope, receive, _with_public_clients(send)
                            if path == METADATA_PATH and method == "GET" else send)
        finally:
            PRESENTED.reset(token)

    async def _presenting(self, scope: Scope, receive: Receive, send: Send) -> None:
        read: list[Message] = []
        body = b""
        while len(body) <= DEFAULT_MAX_REQUEST_BODY_SIZE:
            message = await receive()
            read.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        token = PRESENTED.set(_secrets_in(scope, body))
        try:
            await self._app(scope, replay, send)
        finally:
            PRESENTED.reset(token)


def _address(scope: Scope) -> str:
    # The peer as uvicorn tells it: X-Forwarded-For's client where the peer is a proxy
    # uvicorn trusts (FORWARDED_ALLOW_IPS, 127.0.0.1 unless set), else the peer itself
    # (behind an untrusted proxy every client is the proxy, and shares its limit).
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


async def _too_many(send: Send, what: str, wait_s: int) -> None:
    body = json.dumps({"error": "temporarily_unavailable", "error_description":
                       MCP_OAUTH_TOO_MANY.format(what=what, seconds=wait_s)}).encode()
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"retry-after", str(wait_s).encode()),
        (b"cache-control", b"no-store"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _with_public_clients(send: Send) -> Send:
    """``send``, with ``none`` added to the metadata's client authentications."""
    started: list[Message] = []
    body: list[bytes] = []

    async def amended(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 200:
            started.append(message)
            return
        if not started or message["type"] != "http.response.body":
            await send(message)
            return
        body.append(message.get("body", b""))
        if message.get("more_body"):
            return
        fixed = _listing_none(b"".join(body))
        headers = [(name, value) for name, value in started[0]["headers"]
                   if name.lower() != b"content-length"]
        await send({**started[0], "headers": [
            *headers, (b"content-length", str(len(fixed)).encode())]})
        await send({"type": "http.response.body", "body": fixed})

    return amended


def _listing_none(body: bytes) -> bytes:
    metadata: dict[str, Any] = json.loads(body)
    for field in ("token_endpoint_auth_methods_supported",
                  "revocation_endpoint_auth_methods_supported"):
        methods = metadata.get(field)
        if isinstance(methods, list) and "none" not in methods:
            metadata[field] = [*methods, "none"]
    return json.dumps(metadata).encode()


def _secrets_in(scope: Scope, body: bytes) -> frozenset[str]:
    """What the request presents as its client secret, each way the SDK reads one."""
    presented: set[str] = set()
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization" and value[:6].lower() == b"basic ":
            try:
                decoded = base64.b64decode(value[6:]).decode()
            except (binascii.Error, UnicodeDecodeError):
                continue
            _, colon, secret = decoded.partition(":")
            if colon:
                presented.add(unquote(secret))
    try:
        form = parse_qsl(body.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        form = []
    presented.update(value for name, value in form if name == "client_secret" and value)
    return frozenset(presented)
