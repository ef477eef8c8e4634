"""One of the team's MCP servers, connected through the official SDK's ``Client``.

The connection is opened on first use and kept for the process: its tools are listed
once and listed again when the server says they changed (``tools/list_changed``, heard
on a listen stream where the protocol has one). A
call that fails with the connection (the server died, the network went) drops it, and
the next use connects anew; a call that takes longer than ``timeout_s`` is given up.

Decided:
- A stdio server is started with the SDK's default environment (HOME, LOGNAME, PATH,
  SHELL, TERM, USER: what finds and runs a command, no secret) and the variables its
  entry names, nothing else of Thoth's: ANTHROPIC_API_KEY and the Slack tokens stay
  in Thoth. Its stderr goes to ``THOTH_HOME/logs/mcp-NAME.log``, not to the terminal a
  person chats in.
- The SDK's ``Client`` is entered and left by one task of its own (anyio needs the same
  task for both); every caller awaits the session through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import IO, Any, TextIO, cast

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bridge.team_tools.config import ServerEntry

log = logging.getLogger(__name__)

# How long connecting (starting a stdio server, the handshake) may take.
CONNECT_TIMEOUT_S = 20.0
# How long a server that could not be reached is left out before it is tried again.
RETRY_AFTER_S = 30.0


class ServerDown(Exception):
    """The server could not be reached, or went away mid-call: one line, for the model
    and the operator."""


class ServerConnection:
    """The connection to one server, opened when first needed."""

    def __init__(self, name: str, entry: ServerEntry, *, logs: Path | None = None,
                 auth: httpx2.Auth | None = None) -> None:
        """``auth``: whose token goes on each request (a person's own, for a server
        people sign in to); None: the entry's own headers, the operator's key."""
        self.name = name
        self.entry = entry
        self._logs = logs
        self._auth = auth
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._opening = asyncio.Lock()
        self._tools: list[types.Tool] | None = None
        # Bumped by each change the server tells: a listing begun before it is stale.
        self._changes = 0
        # After a failure, the server is left out until then (monotonic seconds): a turn
        # does not wait on a server that could not start a moment ago.
        self._down_until = 0.0

    async def tools(self) -> list[types.Tool]:
        """The server's tools, as it last listed them."""
        client = await self._connected()
        tools = self._tools
        while tools is None:
            changes = self._changes
            try:
                listed = await client.list_tools()
            except Exception as error:
                await self._drop()
                raise ServerDown(f"{self.name} did not list its tools ({_said(error)})") from error
            if changes == self._changes:  # else it changed meanwhile: list it again
                tools = self._tools = list(listed.tools)
        return tools

    async def call(self, tool: str, arguments: dict[str, Any],
                   timeout_s: float) -> types.CallToolResult:
        """The server's answer to one call; ``ServerDown`` when it gave none in time."""
        client = await self._connected()
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout_s)
        except TimeoutError as error:
            # Its answer may still come: a new connection is not confused by it.
            await self._drop()
            raise ServerDown(f"{self.name} did not answer {tool} within {timeout_s:g} s") from error
        except Exception as error:
            await self._drop()
            raise ServerDown(f"{self.name} failed during {tool} ({_said(error)})") from error
        if not isinstance(result, types.CallToolResult):
            raise ServerDown(f"{self.name} asked for more input during {tool}, which Thoth"
                             " does not give")
        return result

    async def aclose(self) -> None:
        await self._drop()

    async def _connected(self) -> Client:
        async with self._opening:
            if self._client is not None and self._holder is not None and not self._holder.done():
                return self._client
            wait = self._down_until - asyncio.get_running_loop().time()
            if wait > 0:
                raise ServerDown(f"{self.name} failed a moment ago; tried again in {wait:.0f} s")
            self._closing = asyncio.Event()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            self._holder = asyncio.create_task(self._hold(ready, self._closing),
                                               name=f"mcp-client-{self.name}")
            # An answer nobody waits for any more (given up) is still taken, not left to
            # asyncio's "Future exception was never retrieved".
            ready.add_done_callback(_taken)
            try:
                self._client = await asyncio.wait_for(asyncio.shield(ready), CONNECT_TIMEOUT_S)
            except TimeoutError as error:
                await self._drop(failed=True)
                raise ServerDown(f"{self.name} did not start within {CONNECT_TIMEOUT_S:g} s"
                                 ) from error
            except Exception as error:
                await self._drop(failed=True)
                raise ServerDown(f"{self.name} could not be reached ({_said(error)})") from error
            self._tools = None
            return self._client

    async def _hold(self, ready: asyncio.Future[Client], closing: asyncio.Event) -> None:
        """Keep the SDK's client open until ``closing`` (or the connection fails)."""
        errors = self._error_log()
        try:
            async with (Client(self._server(errors), message_handler=self._heard) as client,
                        anyio.create_task_group() as listening):
                if _tells_changes_by_listen(client):
                    try:
                        await listening.start(self._listen, client)
                    except Exception as error:
                        # Its tools are still listed, once: the server works without it.
                        log.warning("MCP server %s refused to tell changes of its tools: %s",
                                    self.name, _said(error))
                if not ready.done():
                    ready.set_result(client)
                await closing.wait()
                listening.cancel_scope.cancel()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error if isinstance(error, Exception)
                                    else ServerDown("stopped"))
            if not isinstance(error, Exception):
                raise
            log.warning("the connection to MCP server %s ended: %s", self.name, _said(error))
        finally:
            if errors is not None:
                errors.close()

    def _server(self, errors: IO[str] | None) -> Any:
        entry = self.entry
        if entry.is_http:
            assert entry.url is not None
            return streamable_http_client(
                entry.url, http_client=create_mcp_http_client(headers=entry.headers or None,
                                                              auth=self._auth))
        assert entry.command is not None
        parameters = StdioServerParameters(command=entry.command, args=entry.args,
                                           env=entry.env or None)
        return _StdioWithLog(parameters, errors)

    def _error_log(self) -> IO[str] | None:
        if self._logs is None or self.entry.is_http:
            return None
        self._logs.mkdir(parents=True, exist_ok=True)
        return (self._logs / f"mcp-{self.name}.log").open("a", encoding="utf-8")

    async def _heard(self, message: object) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            self._changed()

    def _changed(self) -> None:
        self._changes += 1
        self._tools = None

    async def _listen(self, client: Client, *,
                      task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
                      ) -> None:
        """Hear the server's tool list change, on a 2026-07-28 connection (where a change
        reaches only a ``subscriptions/listen`` stream); its stream lost is the connection
        lost, so the next use connects anew."""
        async with client.listen(tools_list_changed=True) as changes:
            task_status.started()
            async for _ in changes:
                self._changed()

    async def _drop(self, *, failed: bool = False) -> None:
        """Let the connection go; ``failed``: it never opened, so the server is left out
        for ``RETRY_AFTER_S`` (its holder, still starting, is cancelled at once)."""
        holder, self._holder, self._client, self._tools = self._holder, None, None, None
        self._closing.set()
        if failed:
            self._down_until = asyncio.get_running_loop().time() + RETRY_AFTER_S
        if holder is not None and not holder.done():
            if failed:
                holder.cancel()
            try:
                await asyncio.wait_for(holder, 5.0)
            except (TimeoutError, Exception):
                holder.cancel()
                with contextlib.suppress(BaseException):
                    await holder


class _StdioWithLog:
    """``stdio_client`` with the server's stderr written to its log file."""

    def __init__(self, parameters: StdioServerParameters, errors: IO[str] | None) -> None:
        from mcp.client.stdio import stdio_client

        self._context = (stdio_client(parameters, errlog=cast(TextIO, errors)) if errors is not None
                         else stdio_client(parameters))

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._context.__aexit__(*exc)


def _tells_changes_by_listen(client: Client) -> bool:
    """Whether the server tells a change of its tools only to a listen stream (a
    2026-07-28 connection, a server that says its list changes); an earlier one sends
    ``notifications/tools/list_changed`` to every client (``_heard``)."""
    tools = client.server_capabilities.tools
    return (client.protocol_version in MODERN_PROTOCOL_VERSIONS and tools is not None
            and bool(tools.list_changed))


def _taken(future: asyncio.Future[Client]) -> None:
    if not future.cancelled():
        future.exception()


def _said(error: BaseException) -> str:
    """An error in one line: its message, or its kind."""
    text = " ".join(str(error).split())
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _said(error.exceptions[0])
    return text[:200] or type(error).__name__
