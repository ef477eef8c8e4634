"""What the Messages API reference says it refuses, for the loopback in ``anthropic_api.py``.

Each check returns the 400 message the real API gives (``invalid_request_error``), or
None. A fake that took more than the API would prove nothing. What differs per model
(max_tokens, thinking types, effort levels, forced tools) is read from that model's row
of ``bridge/model/models.json``, the same rows Thoth shapes its requests by, so a row
that is wrong for the real API is wrong in one place, sourced and dated.
"""

from __future__ import annotations

import re
from typing import Any

from bridge.model.catalogue import CATALOGUE, Capabilities

MAX_CACHE_BREAKPOINTS = 4
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# The request size limit of the Messages API (32 MB): larger bodies get 413.
MAX_BODY_BYTES = 32 * 1024 * 1024
THINKING_TYPES = ("adaptive", "enabled", "disabled", "between_tools")
MIN_THINKING_BUDGET = 1_024


def model_row(body: dict[str, Any]) -> Capabilities | None:
    """The model's row of the catalogue, when the API serves it (retired ids are refused)."""
    info = CATALOGUE.find(str(body.get("model", "")))
    return None if info is None or info.status == "retired" else info.capabilities


def unknown_model(body: dict[str, Any]) -> str | None:
    """The 404 message for a model id the API does not serve."""
    return None if model_row(body) is not None else f"model: {body.get('model', '')}"


def thinks(body: dict[str, Any]) -> bool:
    """Whether the answer to this request starts with thinking: the model thinks unless
    told not to, or it was asked to on a model where thinking is optional."""
    row = model_row(body)
    asked = (body.get("thinking") or {}).get("type")
    if row is None or asked in ("disabled", "between_tools"):
        return False
    return row.thinks or asked in ("adaptive", "enabled")


def thinking_display(body: dict[str, Any]) -> str:
    """"omitted" (the default of every model that thinks by default) or "summarized"."""
    return str((body.get("thinking") or {}).get("display") or "omitted")


def invalid_request(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    """The reason the API would refuse this request with 400, if any."""
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    for check in (_max_tokens, _thinking, _effort, _tools, _messages, _cache_breakpoints):
        reason = check(body)
        if reason is not None:
            return reason
    return None


def _max_tokens(body: dict[str, Any]) -> str | None:
    row = model_row(body)
    wanted = body.get("max_tokens")
    if not isinstance(wanted, int) or wanted < 1:
        return "max_tokens: Field required"
    if row is not None and wanted > row.max_output:
        return (f"max_tokens: {wanted} > {row.max_output}, which is the maximum allowed for"
                f" {body['model']}")
    return None


def _thinking(body: dict[str, Any]) -> str | None:
    """Each model takes only some thinking types (the Thinking page's troubleshooting table)."""
    thinking = body.get("thinking")
    row = model_row(body)
    if thinking is None or row is None:
        return None
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in THINKING_TYPES:
        return "thinking: Input tag does not match any of the expected tags: " + ", ".join(
            f"'{t}'" for t in THINKING_TYPES)
    if kind == "adaptive" and "adaptive" in row.thinking_refused:
        return "adaptive thinking is not supported on this model"
    if kind in row.thinking_refused or kind == "between_tools":
        return (f'"thinking.type.{kind}" is not supported for this model. Use'
                ' "thinking.type.adaptive" and "output_config.effort" to control thinking'
                " behavior.")
    if thinking.get("display") not in (None, "summarized", "omitted"):
        return "thinking.display: Input should be 'summarized' or 'omitted'"
    if kind == "disabled" and "display" in thinking:
        return "thinking.display: not allowed when thinking is disabled"
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return f"thinking.enabled.budget_tokens: Input should be >= {MIN_THINKING_BUDGET}"
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def _effort(body: dict[str, Any]) -> str | None:
    effort = (body.get("output_config") or {}).get("effort")
    row = model_row(body)
    if effort is None or row is None:
        return None
    if not row.effort_levels:
        return "output_config.effort: effort is not supported by this model"
    if effort not in row.effort_levels:
        return (f"output_config.effort: {effort!r} is not supported by {body['model']};"
                f" use one of {', '.join(row.effort_levels)}")
    return None


def _tools(body: dict[str, Any]) -> str | None:
    names = []
    for index, tool in enumerate(body.get("tools") or []):
        name = str(tool.get("name", ""))
        if not TOOL_NAME.match(name):
            return f"tools.{index}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        names.append(name)
    choice = body.get("tool_choice")
    if choice is None:
        return None
    # The Messages API reference: tool_choice is auto | any | tool (with a name) | none,
    # and means nothing (so is refused) without tools.
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any',"\
            " 'tool', 'none'"
    if not names and choice.get("type") != "none":
        return "tool_choice: tool_choice may only be specified while providing tools"
    forced = choice.get("type") == "tool"
    row = model_row(body)
    if choice.get("type") in ("tool", "any"):
        if row is not None and not row.forced_tool_choice:
            return 'tool_choice: type "tool" and "any" are not supported for this model.'
        if thinks(body):
            return "Thinking may not be enabled when tool_choice forces tool use."
    if forced and not isinstance(choice.get("name"), str):
        return "tool_choice.tool.name: Field required"
    if forced and choice.get("name") not in names:
        return f"tool_choice: tool {choice.get('name')!r} is not among the tools provided"
    return None


def _messages(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    for index, message in enumerate(messages):
        if index and message.get("role") == messages[index - 1].get("role"):
            return "messages: roles must alternate between \"user\" and \"assistant\""
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"messages.{index}: text content blocks must be non-empty"
        reason = _tool_results_follow(messages, index)
        if reason is not None:
            return reason
    if messages[-1].get("role") != "user":
        return "messages: the final message must be a user message (no prefill for this model)"
    return None


def _tool_results_follow(messages: list[dict[str, Any]], index: int) -> str | None:
    message = messages[index]
    if message.get("role") != "assistant" or isinstance(message.get("content"), str):
        return None
    used = {b.get("id") for b in message.get("content") or [] if b.get("type") == "tool_use"}
    if not used:
        return None
    following = messages[index + 1] if index + 1 < len(messages) else {}
    content = following.get("content")
    answered = {
        b.get("tool_use_id") for b in (content if isinstance(content, list) else [])
        if b.get("type") == "tool_result"
    }
    if not used <= answered:
        return (
            f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks"
            " immediately after"
        )
    return None


def _cache_breakpoints(body: dict[str, Any]) -> str | None:
    count = _count_cache_control(body.get("system")) + _count_cache_control(body.get("tools"))
    for message in body.get("messages") or []:
        count += _count_cache_control(message.get("content"))
    if count > MAX_CACHE_BREAKPOINTS:
        return f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided"
    return None


def _count_cache_control(blocks: Any) -> int:
    if not isinstance(blocks, list):
        return 0
    return sum(1 for block in blocks if isinstance(block, dict) and block.get("cache_control"))
