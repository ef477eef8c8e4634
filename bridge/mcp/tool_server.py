"""The MCP server that serves Thoth's tools (``bridge/pipeline/tools``) as they are
defined: each under its name, with its own description and JSON schema, its handler
called with the asker of the request.

Decided: served through ``MCPServer``'s own tool methods (``list_tools``,
``call_tool``), not registered as Python functions: the SDK would derive a second
schema from a function's signature, and the one definition is the point. The wire is
the SDK's: a tool's data is its structured result (a list or a string as
``{"result": …}``, an object as itself) and its text content; a call it cannot answer is
the protocol's tool error, "Error executing tool NAME: why" (one line, what the client
sent quoted at most a short prefix); any other failure says no more than that it failed.
Each call is written to the audit log, with who asked and the way in: an answered one as
``mcp.<action>``, a refused or failed one as ``mcp.<tool>`` with the error.

Resources are listed afresh at each ``resources/list`` (``add_listing``): a skill
approved while the server runs is listed without a restart. A resource that is not there
is the protocol's resource-not-found, the same for every resource (``_not_found``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp.types import Resource as MCPResource
from mcp.types import Tool as MCPTool
from mcp_types import INVALID_PARAMS
from mcp_types.version import is_version_at_least
from pydantic import AnyUrl

from bridge.mcp.opening import Opening
from bridge.pipeline.tools import Audit, Tool
from bridge.pipeline.tools.arguments import Arguments, cut, shortened
from layers.shared.errors import BadInput

if TYPE_CHECKING:
    from bridge.mcp.asker import Asker
    from layers.shared.audit.log import AuditLog
    from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

AskerOf = Callable[[], Awaitable["Asker"]]
# Resources to list, read afresh at each resources/list.
Listing = Callable[[], Awaitable[list[MCPResource]]]
# Resource not found, as the spec of a handshake (2024-11-05 to 2025-11-25) names it; from
# 2026-07-28 (SEP-2164) it is INVALID_PARAMS, -32002 only tolerated by clients.
RESOURCE_NOT_FOUND = -32002
NOT_FOUND_INVALID_PARAMS_SINCE = "2026-07-28"


@dataclass(frozen=True)
class Served:
    """What the server serves once the memory is open (``opening.py``)."""

    tools: Mapping[str, Tool[Asker]]
    audit: Offloaded[AuditLog]


class ReadNotFound(ResourceNotFoundError):
    """Nothing there, said by one of Thoth's resources, which audited the read itself."""


class ToolServer(MCPServer[Any]):
    def __init__(self, served: Opening[Served], asker_of: AskerOf,
                 *, origin: str, instructions: str, version: str,
                 token_verifier: TokenVerifier | None = None,
                 auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any]
                 | None = None,
                 auth: AuthSettings | None = None) -> None:
        """``origin``: how the audit log names the way in; ``version``: Thoth's, as the
        initialize handshake tells a client (``serverInfo.version``)."""
        super().__init__(name="thoth", version=version, instructions=instructions,
                         token_verifier=token_verifier,
                         auth_server_provider=auth_server_provider, auth=auth)
        self._served = served
        self._asker_of = asker_of
        self._origin = origin
        self._listings: list[Listing] = []

    async def list_tools(self) -> list[MCPTool]:
        return [MCPTool(name=tool.name, description=tool.description,
                        input_schema=tool.input_schema,
                        annotations=ToolAnnotations(read_only_hint=not tool.changes))
                for tool in (await self._served()).tools.values()] + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        tool = (await self._served()).tools.get(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)
        asker: Asker | None = None
        try:
            asker = await self._asker_of()
            answer = await tool.handle(asker, Arguments(arguments))
            if answer.audit is not None:
                await self.audited(asker, answer.audit, durable=tool.changes)
        except (BadInput, ToolError) as error:
            why = shortened(str(error), arguments.values())
            await self._failed(asker, name, why)
            raise ToolError(f"Error executing tool {name}: {why}") from error
        except MCPError:
            raise
        except Exception as error:
            # Logged by the SDK, with the exception; the client learns only that it failed,
            # the audit log what failed (its text may hold anything: the server's log has it).
            await self._failed(asker, name, f"failed unexpectedly ({type(error).__name__})")
            raise UnexpectedToolError(f"Error executing tool {name}") from error
        return _result(answer.data)

    async def _failed(self, asker: Asker | None, name: str, why: str) -> None:
        """A refused or failed call in the audit log (AuditLog.record redacts it). No
        asker (the request's could not be told): no one to write it as."""
        if asker is None:
            return
        try:
            await self.audited(asker, Audit(name, "failed", why))
        except Exception:
            # The call's own error is what the client must get, not the audit's.
            log.exception("could not audit a failed mcp.%s", name)

    def add_listing(self, listing: Listing) -> None:
        """Resources listed, read afresh, at each resources/list."""
        self._listings.append(listing)

    async def list_resources(self) -> list[MCPResource]:
        listed = await super().list_resources()
        for listing in self._listings:
            listed += await listing()
        return listed

    async def read_resource(self, uri: AnyUrl | str, context: Context[Any, Any] | None = None,
                            ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError as error:
            missing = _not_found(str(uri), str(error), context)
            if not isinstance(error, ReadNotFound):
                # No resource of Thoth's took the URI (the SDK's own not-found).
                await self.read_audited("resource", "", missing.error.message)
            raise missing from error

    async def audited(self, asker: Asker, audit: Audit, *, durable: bool = False) -> None:
        # A read's line is committed without waiting for the disk (Database.write): an
        # fsync was about 0.9 of recall's 6.9 ms over HTTP. What a call changes (a note,
        # a skill draft) is written, and audited, as every change is.
        await (await self._served()).audit.run(
            lambda log: log.record(actor=asker.actor, action=f"mcp.{audit.action}",
                                   target=audit.target, origin=self._origin,
                                   detail=audit.detail, durable=durable))

    async def read_audited(self, kind: str, name: str, error: str = "") -> None:
        """A resource read, in the audit log as a tool call is: a read that failed with
        ``error`` as a failed call."""
        asker = await self._asker_of()
        if error:
            await self._failed(asker, f"read_{kind}", error)
        else:
            await self.audited(asker, Audit(f"read_{kind}", name))


def _not_found(uri: str, why: str, context: Context[Any, Any] | None) -> MCPError:
    """Resource not found, coded as the negotiated protocol's spec says (the SDK answers
    -32603 for a resource's own error and -32602 for an unknown URI, whatever the
    version); the URI cut short where the error repeats it."""
    version = None if context is None else context.protocol_version
    modern = version is not None and is_version_at_least(version, NOT_FOUND_INVALID_PARAMS_SINCE)
    return MCPError(code=INVALID_PARAMS if modern else RESOURCE_NOT_FOUND,
                    message=shortened(why, [uri]), data={"uri": cut(uri)})


def _result(data: Any) -> CallToolResult:
    items = data if isinstance(data, list) else [data]
    return CallToolResult(
        content=[TextContent(type="text", text=item if isinstance(item, str)
                             else json.dumps(item, ensure_ascii=False, indent=2))
                 for item in items],
        structured_content=data if isinstance(data, dict) else {"result": data})
