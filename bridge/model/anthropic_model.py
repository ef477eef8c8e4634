"""The Anthropic Messages API, streamed, behind the ``LanguageModel`` Protocol.

The SDK client is built by the composition root with ``max_retries=0``: retries
belong to ``RetryingModel``, which knows whether text has already reached the
user. Errors are sorted into retryable or not here, where the SDK's types are known.
"""

from __future__ import annotations

from typing import Any

import anthropic
from pydantic import SecretStr

from bridge.model.pricing import Usage
from bridge.model.protocol import (
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    OnText,
    ToolCall,
)

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# Errors Anthropic sends inside an SSE stream, after the HTTP status was already 200.
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def client_options(
    api_key: SecretStr, base_url: str | None, *, timeout_s: float, max_retries: int
) -> dict[str, Any]:
    """Every option of an Anthropic client, explicit: left out, the SDK reads the environment."""
    return {
        "api_key": api_key.get_secret_value(),
        "base_url": base_url or None,
        "timeout": timeout_s,
        "max_retries": max_retries,
    }


class AnthropicModel:
    """One model of the Messages API, through an ``AsyncAnthropic`` client passed in."""

    def __init__(self, client: anthropic.AsyncAnthropic, model: str) -> None:
        self._client = client
        self._model = model

    @property
    def name(self) -> str:
        return self._model

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        try:
            async with self._client.messages.stream(**_api_params(request)) as stream:
                async for event in stream:
                    if event.type == "text" and event.text:
                        await on_text(event.text)
                message = await stream.get_final_message()
        except anthropic.APIStatusError as error:
            raise _status_error(error) from error
        except anthropic.APITimeoutError as error:
            raise ModelUnavailable("the model timed out", retryable=True) from error
        except anthropic.APIConnectionError as error:
            raise ModelUnavailable(f"cannot reach the model: {error}", retryable=True) from error
        return _result(message)

    async def aclose(self) -> None:
        await self._client.close()


def _api_params(request: ModelRequest) -> dict[str, Any]:
    system: list[dict[str, Any]] = []
    for section in request.system:
        block: dict[str, Any] = {"type": "text", "text": section.text}
        if section.cache:
            block["cache_control"] = {"type": "ephemeral"}
        system.append(block)
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": list(request.messages),
    }
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    if request.tool_choice is not None:
        params["tool_choice"] = {"type": "tool", "name": request.tool_choice}
    return params


def _result(message: Any) -> ModelResult:
    texts: list[str] = []
    content: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
            content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            tool_input = dict(block.input) if isinstance(block.input, dict) else {}
            calls.append(ToolCall(block.id, block.name, tool_input))
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input}
            )
    usage = message.usage
    return ModelResult(
        text="".join(texts),
        content=tuple(content),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        ),
        stop_reason=message.stop_reason,
        model=message.model,
    )


def _status_error(error: anthropic.APIStatusError) -> ModelUnavailable:
    status = error.status_code
    error_type = _error_type(error.body)
    retryable = status in RETRYABLE_STATUS or error_type in RETRYABLE_STREAM_ERRORS
    return ModelUnavailable(
        f"the model API answered {status} {error_type or ''}".strip(),
        retryable=retryable,
        retry_after=_retry_after(error),
    )


def _error_type(body: object) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return str(inner["type"])
    return None


def _retry_after(error: anthropic.APIStatusError) -> float | None:
    try:
        value = float(error.response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return max(value, 0.0)
