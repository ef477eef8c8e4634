"""The team's MCP servers, from one file in the shape Claude Code and Cursor read.

``mcp.json`` in THOTH_HOME (or MCP_CONFIG)::

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@org/github-mcp"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
                   "readOnly": ["search_issues", "get_issue"], "places": ["public"]},
        "sentry": {"type": "http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SENTRY_TOKEN}"},
                   "tools": {"exclude": ["delete_project"]}},
        "linear": {"type": "http", "url": "https://mcp.linear.app/mcp", "auth": "oauth"}}}

A team copies its entries from Claude Code or Cursor as they are; Thoth's own keys per
server say which tools are offered (``tools``: ``include`` or ``exclude``), which the
operator vouches change nothing (``readOnly``: run without asking; every other tool is
asked of a person first), and where the server may be used (``places``: ``public``,
``private``, ``im``, ``mpim`` or channel ids; absent: everywhere), and whose rights a
call acts with (``auth``: ``operator``, the key in the entry, or ``oauth``, each
person's own account, connected in the console). A server's own
annotations (``readOnlyHint``) are not trusted: the MCP specification says a client
must treat them as untrusted unless the server is, and here the operator's list is that
trust, written down.

``${VAR}`` is taken from Thoth's environment when the file is read, in every value of an
entry. Decided: an entry that cannot be used (a variable that is not set, a missing
``command``) is left out with one line saying why (``thoth tools list`` and ``thoth
doctor`` show it), and the other servers are used: one team's broken entry does not take
every tool away. A file that is not JSON refuses them all.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from layers.shared.errors import BadInput
from layers.shared.places import Place, listed_in

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# The server names that make tool names the Messages API takes (``NAME__tool``, at most
# 64 characters of letters, digits, _ and -).
SERVER_NAME = r"^[A-Za-z0-9_-]{1,30}$"
SEPARATOR = "__"


class ToolFilter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    include: list[str] | None = None
    exclude: list[str] = []

    def keeps(self, tool: str) -> bool:
        return (self.include is None or tool in self.include) and tool not in self.exclude


class OAuthEntry(BaseModel):
    """How Thoth is known to a server's sign-in (``"oauth": {...}``, Claude Code's key)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    client_id: Annotated[str | None, Field(alias="clientId")] = None
    client_secret: Annotated[str | None, Field(alias="clientSecret")] = None
    scope: str | None = None


class ServerEntry(BaseModel):
    """One server: stdio (``command``) or streamable HTTP (``type: http``, ``url``)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: Literal["stdio", "http", "streamable-http"] | None = None
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}
    tools: ToolFilter = ToolFilter()
    read_only: Annotated[list[str], Field(alias="readOnly")] = []
    places: list[str] | None = None
    # Whose rights a call acts with: "operator", the key this entry carries (in ``env``
    # or ``headers``), whoever asks: said on every card and in the audit log. "oauth":
    # each person's own, signed in through the console (``bridge/connections/``).
    auth: Literal["operator", "oauth"] = "operator"
    # With "oauth": Thoth's client id where the operator registered one (else Thoth
    # registers itself, where the server lets it), its secret, the scopes to ask for.
    oauth: OAuthEntry | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> ServerEntry:
        if self.auth == "oauth" and not self.is_http:
            raise ValueError('"auth": "oauth" needs a remote server ("type": "http" and a'
                             ' "url"): people sign in to a server on the network')
        if self.is_http:
            if not self.url or not self.url.startswith(("http://", "https://")):
                raise ValueError("an http server needs a url that starts http:// or https://")
        elif not self.command:
            raise ValueError('needs a "command" (stdio) or "type": "http" with a "url"')
        return self

    @property
    def is_http(self) -> bool:
        return self.type in ("http", "streamable-http") or (self.type is None and bool(self.url)
                                                             and not self.command)

    def used_in(self, place: Place) -> bool:
        """Whether the server may be used in ``place`` (its kind or its channel)."""
        return listed_in(self.places, place)

    def approved_without_asking(self, tool: str) -> bool:
        return tool in self.read_only


@dataclass(frozen=True)
class TeamToolsConfig:
    """The servers that can be used, by name, and why each other one cannot."""

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)


NO_SERVERS = TeamToolsConfig()


def load_config(path: Path, environment: Mapping[str, str] | None = None) -> TeamToolsConfig:
    """The servers ``path`` lists (none when there is no file); ``BadInput`` with one line
    for a file that cannot be read as the format."""
    if not path.exists():
        return NO_SERVERS
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{path} is not JSON: {error}") from error
    entries = raw.get("mcpServers") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        raise BadInput(f'{path} has no "mcpServers" object (the shape Claude Code and Cursor'
                       " read)")
    variables = os.environ if environment is None else environment
    config = TeamToolsConfig()
    for name, entry in entries.items():
        if not re.match(SERVER_NAME, str(name)):
            config.refused[str(name)] = ("a server's name is letters, digits, _ and -, at most"
                                         " 30 (its tools are called NAME__tool)")
            continue
        try:
            config.servers[name] = ServerEntry.model_validate(_expanded(entry, variables))
        except _Unset as unset:
            config.refused[name] = f"${{{unset.name}}} is not set in the environment"
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            config.refused[name] = f"{where + ': ' if where else ''}{first['msg']}"
    return config


class _Unset(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _expanded(value: Any, environment: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        def variable(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environment:
                raise _Unset(name)
            return environment[name]

        return _VARIABLE.sub(variable, value)
    if isinstance(value, list):
        return [_expanded(item, environment) for item in value]
    if isinstance(value, dict):
        return {key: _expanded(item, environment) for key, item in value.items()}
    return value


def tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by."""
    return f"{server}{SEPARATOR}{tool}"
