"""The MCP server that serves Thoth's tools (``bridge/pipeline/tools``) as they are
defined: each under its name, with its own description and JSON schema, its handler
called with the asker of the request.

Decided: served through ``MCPServer``'s own tool methods (``list_tools``,
``call_tool``), not registered as Python functions: the SDK would derive a second
schema from a function's signature, and the one definition is the point. The wire is
the SDK's: a tool's data is its structured result (a list or a string as
``{"result": …}``, an object as itself) and its text content; a call it cannot answer is
the protocol's tool error, "Error executing tool NAME: why"; any other failure says no
more than that it failed. Each answered call is written to the audit log as
``mcp.<action>``, with who asked and the way in.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp.server.auth.provider import OAuthAuthorizationServerProvider, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool

from bridge.mcp.asker import Asker
from bridge.pipeline.tools import Audit, Tool
from bridge.pipeline.tools.arguments import Arguments
from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded

AskerOf = Callable[[], Awaitable[Asker]]


class ToolServer(MCPServer[Any]):
    def __init__(self, tools: Sequence[Tool[Asker]], asker_of: AskerOf,
                 audit: Offloaded[AuditLog], *, origin: str, instructions: str,
                 token_verifier: TokenVerifier | None = None,
                 auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any]
                 | None = None,
                 auth: AuthSettings | None = None) -> None:
        """``origin``: how the audit log names the way in."""
        super().__init__(name="thoth", instructions=instructions, token_verifier=token_verifier,
                         auth_server_provider=auth_server_provider, auth=auth)
        self._tools = {tool.name: tool for tool in tools}
        self._asker_of = asker_of
        self._audit = audit
        self._origin = origin

    async def list_tools(self) -> list[MCPTool]:
        return [MCPTool(name=tool.name, description=tool.description,
                        input_schema=tool.input_schema,
                        annotations=ToolAnnotations(read_only_hint=not tool.changes))
                for tool in self._tools.values()] + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        tool = self._tools.get(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)
        try:
            asker = await self._asker_of()
            answer = await tool.handle(asker, Arguments(arguments))
            if answer.audit is not None:
                await self.audited(asker, answer.audit, durable=tool.changes)
        except (BadInput, ToolError) as error:
            raise ToolError(f"Error executing tool {name}: {error}") from error
        except MCPError:
            raise
        except Exception as error:
            # Logged by the SDK, with the exception; the client learns only that it failed.
            raise UnexpectedToolError(f"Error executing tool {name}") from error
        return _result(answer.data)

    async def audited(self, asker: Asker, audit: Audit, *, durable: bool = False) -> None:
        # A read's line is committed without waiting for the disk (Database.write): an
        # fsync was about 0.9 of recall's 6.9 ms over HTTP. What a call changes (a note,
        # a skill draft) is written, and audited, as every change is.
        await self._audit.run(AuditLog.record, actor=asker.actor, action=f"mcp.{audit.action}",
                              target=audit.target, origin=self._origin, detail=audit.detail,
                              durable=durable)

    async def read_audited(self, kind: str, name: str) -> None:
        """A resource read, in the audit log as a tool call is."""
        await self.audited(await self._asker_of(), Audit(f"read_{kind}", name))


def _result(data: Any) -> CallToolResult:
    items = data if isinstance(data, list) else [data]
    return CallToolResult(
        content=[TextContent(type="text", text=item if isinstance(item, str)
                             else json.dumps(item, ensure_ascii=False, indent=2))
                 for item in items],
        structured_content=data if isinstance(data, dict) else {"result": data})
