"""Each of the team's MCP servers asked once for its tools, with a deadline, for `thoth
tools list` and `thoth doctor`: what it offers, or why it could not answer and the fix.

Every server is probed at once on a connection of its own (not a turn's), closed after.
Decided: what is shown of an entry is what mcp.json says before ``${VAR}`` is expanded
(``entries_as_written``), and never an ``env`` or header value, only their names: those
are where tokens are kept.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
from mcp.shared._httpx_utils import create_mcp_http_client

from bridge.connections.discovery import ConnectRefused, discover
from bridge.team_tools.config import ServerEntry, TeamToolsConfig
from bridge.team_tools.connection import ServerConnection, ServerDown

# How long one server may take to start and list its tools; servers are probed at once.
PROBE_DEADLINE_S = 15.0
# The second look at an HTTP server that answered with an error status: which one.
STATUS_LOOK_S = 5.0


@dataclass(frozen=True)
class Offered:
    """The tools a server listed."""

    tools: list[types.Tool]


@dataclass(frozen=True)
class Unreachable:
    """Why a server could not be reached or listed, and what to do about it."""

    why: str
    fix: str


@dataclass(frozen=True)
class SignsPeopleIn:
    """A server each person connects their own account to: where they sign in. Its tools
    are listed to each person, with their token, so none are listed here."""

    issuer: str


Probe = Offered | Unreachable | SignsPeopleIn


def probed(config: TeamToolsConfig, *, logs: Path | None,
           deadline_s: float = PROBE_DEADLINE_S) -> dict[str, Probe]:
    """Each usable server's tools or why not, all asked at once (from outside a loop)."""
    return asyncio.run(probe_all(config, logs=logs, deadline_s=deadline_s))


async def probe_all(config: TeamToolsConfig, *, logs: Path | None,
                    deadline_s: float = PROBE_DEADLINE_S) -> dict[str, Probe]:
    names = list(config.servers)
    found = await asyncio.gather(*(probe(name, config.servers[name], logs=logs,
                                         deadline_s=deadline_s) for name in names))
    return dict(zip(names, found, strict=True))


async def probe(name: str, entry: ServerEntry, *, logs: Path | None,
                deadline_s: float = PROBE_DEADLINE_S) -> Probe:
    """One server's tools, or why it gave none within ``deadline_s``; for a server people
    sign in to, where they do (discovery as a sign-in begins it)."""
    if entry.auth == "oauth":
        return await _sign_in_found(name, entry, deadline_s)
    connection = ServerConnection(name, entry, logs=logs)
    try:
        tools = await asyncio.wait_for(connection.tools(), deadline_s)
    except TimeoutError:
        return _late(name, entry, deadline_s, logs)
    except ServerDown as down:
        return await _diagnosed(name, entry, down, logs)
    finally:
        await connection.aclose()
    return Offered(list(tools))


async def _sign_in_found(name: str, entry: ServerEntry, deadline_s: float) -> Probe:
    assert entry.url is not None
    try:
        async with httpx2.AsyncClient(timeout=deadline_s, follow_redirects=False) as http:
            found = await asyncio.wait_for(discover(http, entry.url, name), deadline_s)
    except TimeoutError:
        return Unreachable(f"{_where(entry)} did not answer within {deadline_s:g} s",
                           "check the url and that the server is up and reachable from here")
    except ConnectRefused as refused:
        return Unreachable(str(refused), "check the url; a server people sign in to must"
                                         " offer OAuth with PKCE (MCP's authorization)")
    return SignsPeopleIn(found.issuer)


def _late(name: str, entry: ServerEntry, deadline_s: float, logs: Path | None) -> Unreachable:
    if entry.is_http:
        return Unreachable(f"{_where(entry)} did not answer within {deadline_s:g} s",
                           "check the url and that the server is up and reachable from here")
    return Unreachable(f"did not start within {deadline_s:g} s",
                       "run its command by hand: an MCP stdio server starts and waits on"
                       f" stdin{_log_hint(name, logs)}")


async def _diagnosed(name: str, entry: ServerEntry, down: ServerDown,
                     logs: Path | None) -> Unreachable:
    causes = list(_causes(down))
    if not entry.is_http:
        missing = next((c for c in causes if isinstance(c, FileNotFoundError)), None)
        if missing is not None:
            return Unreachable(f"the command {entry.command!r} was not found",
                               'install it, or give its full path as "command" (Thoth\'s'
                               " PATH is searched)")
        if any(isinstance(c, PermissionError) for c in causes):
            return Unreachable(f"the command {entry.command!r} cannot be run",
                               f"make it executable (chmod +x {entry.command})")
        if any("Connection closed" in str(c) for c in causes):
            return Unreachable("its command exited before it answered",
                               f"run its command by hand to see why{_log_hint(name, logs)}")
        return Unreachable(_cut(down), f"run its command by hand{_log_hint(name, logs)}")
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return Unreachable(f"{_where(entry)} refused the connection",
                           "check the url's host and port, and that the server is running")
    if any(type(c).__name__ == "gaierror" for c in causes):
        return Unreachable(f"the host of {_where(entry)} was not found", "check the url")
    status = await _status(entry)
    if status in (401, 403):
        return Unreachable(f"{_where(entry)} answered HTTP {status}",
                           "check the headers' token (the Authorization header in mcp.json,"
                           " and the variable it names)")
    if status is not None and status >= 400:
        return Unreachable(f"{_where(entry)} answered HTTP {status}",
                           "check the url: the server's streamable HTTP endpoint (often"
                           " ending /mcp)")
    return Unreachable(_cut(down), "check the url and headers, and that the server speaks"
                                   " streamable HTTP")


async def _status(entry: ServerEntry) -> int | None:
    """The HTTP status an initialize request gets (the SDK says only that it failed)."""
    assert entry.url is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "thoth-doctor", "version": "1"}}}
    try:
        async with create_mcp_http_client(headers=entry.headers or None) as client:
            response = await asyncio.wait_for(client.post(
                entry.url, json=hello,
                headers={"Accept": "application/json, text/event-stream"}), STATUS_LOOK_S)
    except Exception:
        return None
    return response.status_code


def _causes(error: BaseException) -> Any:
    """``error`` and what caused it, through exception groups."""
    seen: set[int] = set()
    stack: list[BaseException] = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)


def _cut(down: ServerDown) -> str:
    return " ".join(str(down).split())[:200]


def _log_hint(name: str, logs: Path | None) -> str:
    return f"; its errors are in {logs / f'mcp-{name}.log'}" if logs is not None else ""


def _where(entry: ServerEntry) -> str:
    return shown_url(entry.url or "")


def shown_url(url: str) -> str:
    """A url without what may hold a secret (a user and password, the query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" + ("?…" if parts.query else "")


def refused_fix(why: str) -> str:
    """What to do about an entry of mcp.json that cannot be used."""
    if why.startswith("${") and "} is not set" in why:
        variable = why[2:why.index("}")]
        return (f"set {variable} in the environment Thoth starts in (a .env line is not"
                " read for mcp.json), or remove the entry")
    return "correct the entry in mcp.json"


def entries_as_written(path: Path) -> dict[str, dict[str, Any]]:
    """mcp.json's entries as the file has them, ``${VAR}`` not expanded, in its order
    (what a listing shows); empty when the file cannot be read as the format."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    entries = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {str(name): entry if isinstance(entry, dict) else {}
            for name, entry in entries.items()}


def transport(written: dict[str, Any]) -> dict[str, Any]:
    """How an entry is reached, as written: its command and args, or its url; the names
    of its env variables or headers, never their values."""
    url = written.get("url")
    kind = written.get("type")
    if kind in ("http", "streamable-http") or (kind is None and url and not
                                                 written.get("command")):
        headers = written.get("headers")
        return {"transport": "http", "url": shown_url(str(url or "")),
                "headers": list(map(str, headers)) if isinstance(headers, dict) else []}
    args = written.get("args")
    env = written.get("env")
    return {"transport": "stdio", "command": str(written.get("command") or ""),
            "args": [str(arg) for arg in args] if isinstance(args, list) else [],
            "env": list(map(str, env)) if isinstance(env, dict) else []}


def transport_line(shown: dict[str, Any]) -> str:
    """``transport``'s answer in one line."""
    if shown["transport"] == "http":
        names, line = shown["headers"], f"http {shown['url']}"
        return line + (f" (headers: {', '.join(names)})" if names else "")
    names, line = shown["env"], " ".join(["stdio", shown["command"], *shown["args"]]).rstrip()
    return line + (f" (env: {', '.join(names)})" if names else "")
