"""The Anthropic Messages API, streamed, behind the ``LanguageModel`` Protocol.

The SDK client is built by the composition root with ``max_retries=0``: retries
belong to ``RetryingModel``, which knows whether text has already reached the
user. Errors are sorted into retryable or not here, where the SDK's types are known.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
from pydantic import SecretStr

from bridge.model.catalogue import CATALOGUE, Capabilities, ModelCatalogue
from bridge.model.pricing import Usage
from bridge.model.protocol import (
    Attachment,
    ModelRefusedRequest,
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    OnText,
    PromptTooLong,
    Said,
    SpendLimitReached,
    SystemSection,
    ToolCall,
    ToolExchange,
    ToolOutcome,
)
from layers.shared.quoting import quoted

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# Errors Anthropic sends inside an SSE stream, after the HTTP status was already 200.
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# A 429 for the organisation's monthly spend cap ("details": {"error_code": …}): no retry
# gets through before it resets, so it is told, not retried (the Rate limits page).
SPEND_LIMIT_CODE = "enforced_spend_limit_reached"
# A conversation past the context window is a 400 too, and the only one a new thread mends.
PROMPT_TOO_LONG = "prompt is too long"
# A limit the organisation set itself in the Console is a 400 saying so.
SPEND_LIMIT_SET_HERE = "reached your specified"
# Thinking is never shown nor stored (what the person sees between tool calls is the task
# steps), so it is asked for without its text: the signature alone carries it across a
# tool round, and the response is smaller. It is the default on every model that thinks
# by default today; sent so that a model defaulting to "summarized" changes nothing.
THINKING = {"type": "adaptive", "display": "omitted"}


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
    """Models of the Messages API, through an ``AsyncAnthropic`` client passed in; each
    request is shaped by its model's row of the catalogue (thinking, effort, tools)."""

    def __init__(
        self, client: anthropic.AsyncAnthropic, model: str, catalogue: ModelCatalogue = CATALOGUE
    ) -> None:
        self._client = client
        self._model = model
        self._catalogue = catalogue

    @property
    def name(self) -> str:
        return self._model

    @property
    def memory_only(self) -> bool:
        return False

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        params = api_params(request, self._catalogue.capabilities(request.model))
        try:
            async with self._client.messages.stream(**params) as stream:
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


def api_params(request: ModelRequest, capabilities: Capabilities) -> dict[str, Any]:
    """The Messages API's parameters for ``request`` on a model with ``capabilities``."""
    system: list[dict[str, Any]] = []
    for section in request.system:
        block: dict[str, Any] = {"type": "text", "text": section.text}
        if section.cache:
            block["cache_control"] = {"type": "ephemeral"}
        system.append(block)
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": min(request.max_tokens, capabilities.max_output),
        "system": system,
        "messages": wire_messages(request),
    }
    if capabilities.thinks:
        params["thinking"] = dict(THINKING)
    effort = capabilities.effort_for(request.effort)
    if effort is not None:
        params["output_config"] = {"effort": effort}
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    if request.tool_choice is not None:
        # Opus 5.5, Sonnet 5.5 and the Fables refuse a forced tool with 400: there the tool
        # is offered and the prompt asks for the call (reflection asks again if it is not).
        params["tool_choice"] = (
            {"type": "tool", "name": request.tool_choice}
            if capabilities.forced_tool_choice
            else {"type": "auto"}
        )
    return params


def wire_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The conversation as Messages API params, the turn's context as text blocks ahead of
    the person's words (``request.turn_index``)."""
    wire: list[dict[str, Any]] = []
    for at, message in enumerate(request.messages):
        if isinstance(message, ToolExchange):
            wire.extend(_tool_round(message))
            continue
        context = request.context if at == request.turn_index else ()
        wire.append({"role": message.role, "content": _content(message, context)})
    return wire


def _content(said: Said, context: tuple[SystemSection, ...]) -> str | list[dict[str, Any]]:
    if not context and not said.cache and not said.attachments:
        return said.text
    words: dict[str, Any] = {"type": "text", "text": said.text}
    if said.cache:
        words["cache_control"] = {"type": "ephemeral"}
    # Files before the words they come with: Claude reads an image or a document best
    # ahead of the question about it (the Vision page).
    return [*({"type": "text", "text": section.text} for section in context),
            *(block for attached in said.attachments for block in _attachment(attached)),
            words]


def _attachment(attached: Attachment) -> list[dict[str, Any]]:
    """A shared file as content blocks: its name, then the image or document itself; a
    text file (and the list of files not read) as quoted text, never as instructions."""
    name = quoted(attached.name)
    if attached.kind in ("image", "document"):
        return [{"type": "text", "text": f'<shared-file name="{name}"/>'}, _shown(attached)]
    if attached.kind == "unread":
        return [{"type": "text", "text": f"<unread-files>\n{quoted(attached.text)}\n"
                                         "</unread-files>"}]
    return [{"type": "text", "text": f'<shared-file name="{name}">\n{quoted(attached.text)}\n'
                                     "</shared-file>"}]


def _shown(attached: Attachment) -> dict[str, Any]:
    """An image or a document as the block the model sees it in."""
    source = {"type": "base64", "media_type": attached.media_type,
              "data": base64.b64encode(attached.data).decode("ascii")}
    shown: dict[str, Any] = {"type": attached.kind, "source": source}
    if attached.kind == "document":
        shown["title"] = attached.name
    return shown


def _tool_round(exchange: ToolExchange) -> list[dict[str, Any]]:
    """The model's turn as it came (every block, thinking and its signature included: the
    API refuses a tool round whose thinking was dropped or changed), then the results."""
    asked = list(exchange.echo) or [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
        for call in exchange.calls
    ]
    results = [
        {"type": "tool_result", "tool_use_id": outcome.call_id,
         "content": _tool_content(outcome),
         **({"is_error": True} if outcome.is_error else {})}
        for outcome in exchange.outcomes
    ]
    return [{"role": "assistant", "content": asked}, {"role": "user", "content": results}]


def _tool_content(outcome: ToolOutcome) -> str | list[dict[str, Any]]:
    """A tool's answer: its text, then the images it answered with as image blocks (a
    tool_result's content may be text and image blocks); what could not be shown is
    named in quoted text. No empty text block: the API refuses one."""
    if not outcome.attachments:
        return outcome.text
    blocks: list[dict[str, Any]] = []
    if outcome.text.strip():
        blocks.append({"type": "text", "text": outcome.text})
    for attached in outcome.attachments:
        blocks.extend([_shown(attached)] if attached.kind in ("image", "document")
                      else _attachment(attached))
    return blocks


def _result(message: Any) -> ModelResult:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            tool_input = dict(block.input) if isinstance(block.input, dict) else {}
            calls.append(ToolCall(block.id, block.name, tool_input))
    usage = message.usage
    return ModelResult(
        text="".join(texts),
        echo=tuple(
            _as_sent_back(block) for block in message.content if not _empty_text(block)
        ),
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


def _empty_text(block: Any) -> bool:
    """An empty text block beside a tool_use, which the API sends and refuses to be sent
    back ("text content blocks must be non-empty"): the only block not kept."""
    return block.type == "text" and not block.text.strip()


def _as_sent_back(block: Any) -> dict[str, Any]:
    """A response block as its request param: every field the API set, nothing added
    (a thinking block's empty text and its signature stay exactly as they came)."""
    sent: dict[str, Any] = block.to_dict(mode="json", exclude_none=True)
    return sent


def _status_error(error: anthropic.APIStatusError) -> ModelUnavailable:
    status = error.status_code
    error_type, message, code = _error_fields(error.body)
    if (status == 429 and code == SPEND_LIMIT_CODE) or (
        status == 400 and SPEND_LIMIT_SET_HERE in (message or "")
    ):
        return SpendLimitReached(message or SPEND_LIMIT_CODE)
    retryable = status in RETRYABLE_STATUS or error_type in RETRYABLE_STREAM_ERRORS
    if status == 400 and PROMPT_TOO_LONG in (message or ""):
        return PromptTooLong(status, message or PROMPT_TOO_LONG)
    if not retryable and 400 <= status < 500:
        return ModelRefusedRequest(status, message or error_type or "no message")
    return ModelUnavailable(
        f"the model API answered {status} {error_type or ''}".strip(),
        retryable=retryable,
        retry_after=_retry_after(error),
    )


def _error_fields(body: object) -> tuple[str | None, str | None, str | None]:
    """The error's type, message and ``details.error_code``, where the body has them."""
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        return None, None, None
    details = inner.get("details")
    code = details.get("error_code") if isinstance(details, dict) else None

    def text(value: object) -> str | None:
        return value if isinstance(value, str) else None

    return text(inner.get("type")), text(inner.get("message")), text(code)


def _retry_after(error: anthropic.APIStatusError) -> float | None:
    try:
        value = float(error.response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return max(value, 0.0)
