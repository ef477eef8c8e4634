"""One tool round of a turn: run the calls the model made, showing each as a step, and
build the next request from what they answered."""

from __future__ import annotations

from bridge.model.protocol import ModelRequest, ModelResult, ToolOutcome
from bridge.pipeline.reply_sink import ReplySink, Step, show_step
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.turn import Turn


async def run_tool_round(
    request: ModelRequest, result: ModelResult, turn: Turn, sink: ReplySink, tools: ToolBox
) -> ModelRequest:
    outcomes: list[ToolOutcome] = []
    for call in result.tool_calls:
        title = tools.step_title(call.name)
        await show_step(sink, Step(call.id, title, "in_progress"), stop=True)
        outcome = await tools.outcome(call, turn)
        await show_step(sink, Step(call.id, title, "error" if outcome.is_error else "complete"),
                        stop=True)
        outcomes.append(outcome)
    return request.after_tools(result, outcomes)
