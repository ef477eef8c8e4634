"""What the Messages API reference says it refuses, for the loopback in ``anthropic_api.py``.

Each check returns the 400 message the real API gives (``invalid_request_error``), or
None. A fake that took more than the API would prove nothing.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CACHE_BREAKPOINTS = 4
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# The request size limit of the Messages API (32 MB): larger bodies get 413.
MAX_BODY_BYTES = 32 * 1024 * 1024
# Models the API serves (Models overview, late 2026) and their output limits; a retired
# or unknown id is answered 404 not_found_error.
MAX_OUTPUT_TOKENS = {
    "claude-opus-5-5": 128_000, "claude-sonnet-5-5": 128_000, "claude-haiku-5-5": 128_000,
    "claude-fable-5-1": 128_000, "claude-opus-5": 128_000, "claude-sonnet-5": 128_000,
    "claude-opus-4-8": 128_000, "claude-opus-4-7": 128_000, "claude-opus-4-6": 128_000,
    "claude-opus-4-5": 64_000, "claude-sonnet-4-6": 128_000, "claude-sonnet-4-5": 64_000,
    "claude-haiku-4-5": 64_000,
}


def unknown_model(body: dict[str, Any]) -> str | None:
    """The 404 message for a model id the API does not serve (dated ids by prefix)."""
    model = str(body.get("model", ""))
    if any(model == known or model.startswith(known + "-") for known in MAX_OUTPUT_TOKENS):
        return None
    return f"model: {model}"


def invalid_request(headers: dict[str, str], body: dict[str, Any]) -> str | None:
    """The reason the API would refuse this request with 400, if any."""
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    for check in (_max_tokens, _tools, _messages, _cache_breakpoints):
        reason = check(body)
        if reason is not None:
            return reason
    return None


def _max_tokens(body: dict[str, Any]) -> str | None:
    model = str(body.get("model", ""))
    limit = next((v for k, v in MAX_OUTPUT_TOKENS.items() if model.startswith(k)), None)
    wanted = body.get("max_tokens")
    if not isinstance(wanted, int) or wanted < 1:
        return "max_tokens: Field required"
    if limit is not None and wanted > limit:
        return f"max_tokens: {wanted} > {limit}, which is the maximum allowed for {body['model']}"
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
