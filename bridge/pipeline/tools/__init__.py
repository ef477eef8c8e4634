"""The tools the model may call during a turn: each one object, all in one registry.

A tool is its spec (what the model reads), its step title (what the person sees while
it runs) and its handler. ``bridge/app.py`` builds the list from the parts it has and
hands the registry to the pipeline: a new tool is a module here and a line there.
Decided: a tool's step title lives with the tool, not in ``bridge/messages.py``, so the
tool is written in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.model.protocol import ToolCall, ToolSpec
from bridge.pipeline.turn import Turn

log = logging.getLogger(__name__)

# A handler's answer: the text for the model, and whether it is an error (told to the
# model, never raised).
ToolResult = tuple[str, bool]
Handler = Callable[[dict[str, Any], Turn], Awaitable[ToolResult]]
OTHER_TOOL_TITLE = "Using a tool"


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    step_title: str
    handle: Handler


class ToolBox:
    """The registry of a process's tools: their specs for the request, and running a call."""

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self._tools = {tool.spec.name: tool for tool in tools}

    @property
    def specs(self) -> Sequence[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def step_title(self, name: str) -> str:
        tool = self._tools.get(name)
        return tool.step_title if tool is not None else OTHER_TOOL_TITLE

    async def run(self, call: ToolCall, turn: Turn) -> ToolResult:
        """The tool's text result and whether it is an error."""
        tool = self._tools.get(call.name)
        if tool is None:
            return f"Unknown tool {call.name!r}.", True
        try:
            return await tool.handle(call.input, turn)
        except Exception:
            log.exception("tool %s failed", call.name)
            return f"The tool {call.name} failed; go on without it.", True
