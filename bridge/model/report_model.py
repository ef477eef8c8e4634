"""Reflection's ``ReportModel`` on the turns' model stack (retries, the cap, the charge).

``thoth reflect`` is a plain process without an event loop of its own; ``run`` is the
loop it made for the model's client, which outlives one call (a cut report is asked
once more).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from bridge.model.protocol import (
    LanguageModel,
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    Said,
    SystemSection,
    ToolSpec,
)
from layers.shared.errors import BackendUnavailable
from reflection.model import Tool, ToolAnswer

RunOnLoop = Callable[[Coroutine[Any, Any, ModelResult]], ModelResult]


class LanguageReportModel:
    def __init__(
        self, model: LanguageModel, model_id: str, run: RunOnLoop, *, effort: str | None = None
    ) -> None:
        self._model = model
        self._model_id = model_id
        self._run = run
        self._effort = effort

    def call_tool(
        self, *, system: str, prompt: str, tool: Tool, max_tokens: int, session_id: str,
        reminder: str | None = None,
    ) -> ToolAnswer:
        asked = Said("user", prompt)
        if reminder is not None:
            # Said beside the prompt, not as a reply to one: the answer that did not call
            # the tool is not sent back (it may hold thinking bound to that request).
            asked = Said("user", f"{prompt}\n\n{reminder}")
        request = ModelRequest(
            model=self._model_id,
            system=(SystemSection("instructions", system),),
            messages=(asked,),
            tools=(ToolSpec(tool.name, tool.description, tool.input_schema),),
            tool_choice=tool.name,
            max_tokens=max_tokens,
            effort=self._effort,
            purpose="reflection",
            session_id=session_id,
        )
        try:
            result = self._run(self._model.respond(request, _nobody_reads))
        except ModelUnavailable as error:
            raise BackendUnavailable(f"the reflection model failed: {error}") from error
        called = next((call for call in result.tool_calls if call.name == tool.name), None)
        return ToolAnswer(
            tool_input=None if called is None else called.input,
            text=result.text,
            stop_reason=result.stop_reason,
        )


async def _nobody_reads(text: str) -> None:
    """Nothing of a reflection is streamed to anyone."""
