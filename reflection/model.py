"""The language model as reflection sees it: one tool call asked for, answered.

Reflection owns this Protocol; the bridge gives it the same model stack turns use
(retries, the daily cap and the charge: ``bridge/model/report_model.py``), and tests
give it their stand-ins. So ``reflection/`` imports nothing of the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolAnswer:
    # The tool's input, when the model called it (forced, or asked for in words).
    tool_input: dict[str, Any] | None
    # Any text the model wrote beside it.
    text: str
    stop_reason: str | None


class ReportModel(Protocol):
    def call_tool(
        self, *, system: str, prompt: str, tool: Tool, max_tokens: int, session_id: str,
        reminder: str | None = None,
    ) -> ToolAnswer:
        """Ask for one call of ``tool`` (forced where the model accepts it; elsewhere the
        prompt asks, and ``reminder`` is said again when an answer did not call it).
        Raises ``layers.shared.errors.CostCapReached`` when today's spend is at the cap,
        ``BackendUnavailable`` when the model failed."""
        ...
