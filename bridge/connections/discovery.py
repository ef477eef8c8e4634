"""Finding where a remote MCP server sends people to sign in, as MCP's authorization
specification orders it: the server's 401 names its protected resource metadata
(``WWW-Authenticate: Bearer resource_metadata=...``), else the well-known paths (RFC
9728); that names the authorization server, whose metadata is found at the RFC 8414 and
the OpenID Connect discovery paths, both, in the specification's order.

The URL lists and the response parsing are the MCP SDK's (``mcp.client.auth.utils``):
the specification's order is theirs to keep. What is refused here is Thoth's to decide:
- a server whose authorization server does not offer PKCE with S256 (the specification:
  a client MUST refuse to proceed);
- metadata whose ``resource`` is not this server (a token for it would be sent to
  another), or whose ``issuer`` is not the authorization server it was asked of;
- any endpoint over plain http but on this machine (127.0.0.1, localhost): a code and a
  token cross it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from layers.shared.errors import BadInput

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
# An initialize request, as any MCP client's first: the server answers 401 and says
# where its metadata is.
_FIRST_REQUEST = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "thoth", "version": "1"}}}


class ConnectRefused(BadInput):
    """A sign-in (or a renewal) that cannot go on, in one line for the person and the
    operator. ``lasting``: the server refused the grant itself (connect again); else it
    could not answer now (a network failure, a 5xx, a 429), and the grant may still be
    good, so nothing is thrown away."""

    def __init__(self, message: str, *, lasting: bool = True) -> None:
        super().__init__(message)
        self.lasting = lasting


@dataclass(frozen=True)
class Discovered:
    """Where a person signs in to use one server."""

    resource: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    revocation_endpoint: str | None
    scope: str | None


async def discover(http: httpx2.AsyncClient, server_url: str, name: str) -> Discovered:
    """How to sign in to ``server_url``; ``ConnectRefused`` saying why not."""
    must_be_safe(server_url, name)
    try:
        first = await http.post(server_url, json=_FIRST_REQUEST, headers={
            "Accept": "application/json, text/event-stream"})
    except httpx2.HTTPError as error:
        raise ConnectRefused(f"{name} could not be reached ({_said(error)})") from error
    hint = extract_resource_metadata_from_www_auth(first) if first.status_code == 401 else None
    scope = extract_scope_from_www_auth(first) if first.status_code == 401 else None
    if hint is not None:
        must_be_safe(hint, name)
    protected = await _protected_resource(http, hint, server_url)
    resource = resource_url_from_server_url(server_url)
    if protected is not None:
        if not check_resource_allowed(resource, str(protected.resource)):
            raise ConnectRefused(
                f"{name} says its tokens are for {protected.resource}, not {resource}:"
                " refused, so that no token for it goes elsewhere")
        # The resource as the server names it is what its tokens are bound to.
        resource = str(protected.resource)
        first_server = str(protected.authorization_servers[0])
        must_be_safe(first_server, name)
        authorization_server: str | None = first_server
        if scope is None and protected.scopes_supported:
            scope = " ".join(protected.scopes_supported)
    else:
        # Servers of the 2025-03-26 specification: their own origin is the server.
        authorization_server = None
    metadata = await _authorization_server(http, authorization_server, server_url, name)
    if "S256" not in (metadata.code_challenge_methods_supported or []):
        raise ConnectRefused(
            f"{name}'s sign-in does not offer PKCE (S256), which MCP's authorization"
            " requires: refused")
    endpoints = [metadata.authorization_endpoint, metadata.token_endpoint,
                 metadata.registration_endpoint, metadata.revocation_endpoint]
    for endpoint in endpoints:
        if endpoint is not None:
            must_be_safe(str(endpoint), name)
    return Discovered(
        resource=resource, issuer=str(metadata.issuer),
        authorization_endpoint=str(metadata.authorization_endpoint),
        token_endpoint=str(metadata.token_endpoint),
        registration_endpoint=_text(metadata.registration_endpoint),
        revocation_endpoint=_text(metadata.revocation_endpoint),
        scope=scope)


def must_be_safe(url: str, name: str) -> None:
    """``ConnectRefused`` for an address a code or token must not cross."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS):
        return
    raise ConnectRefused(f"{name}'s sign-in goes through {parts.scheme}://{parts.netloc},"
                         " which is not https: refused")


async def _protected_resource(http: httpx2.AsyncClient, hint: str | None,
                              server_url: str) -> ProtectedResourceMetadata | None:
    for url in build_protected_resource_metadata_discovery_urls(hint, server_url):
        try:
            response = await http.get(url)
        except httpx2.HTTPError:
            continue
        found = await handle_protected_resource_response(response)
        if found is not None:
            return found
    return None


async def _authorization_server(http: httpx2.AsyncClient, issuer: str | None,
                                server_url: str, name: str) -> OAuthMetadata:
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        try:
            response = await http.get(url)
        except httpx2.HTTPError:
            continue
        go_on, metadata = await handle_auth_metadata_response(response)
        if metadata is not None:
            if issuer is not None and not _same_issuer(str(metadata.issuer), issuer):
                raise ConnectRefused(f"{name}'s authorization server says it is"
                                     f" {metadata.issuer}, not {issuer}: refused")
            return metadata
        if not go_on:
            break
    raise ConnectRefused(f"{name} names no authorization server Thoth can find"
                         f" ({issuer or server_url}): it cannot be connected")


def _same_issuer(said: str, asked: str) -> bool:
    return said.rstrip("/") == asked.rstrip("/")


def _text(value: object | None) -> str | None:
    return None if value is None else str(value)


def _said(error: BaseException) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__


def error_of(response: httpx2.Response) -> str:
    """An OAuth error answer in one line: its ``error`` and description, else the status."""
    try:
        body = response.json()
    except (json.JSONDecodeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("error"):
        described = body.get("error_description")
        return f"{body['error']}{': ' + str(described) if described else ''}"[:300]
    return f"HTTP {response.status_code}"
