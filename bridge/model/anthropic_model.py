"""The Anthropic Messages API, streamed, behind the ``LanguageModel`` Protocol.

The SDK client is built by the composition root with ``max_retries=0``: retries
belong to ``RetryingModel``, which knows whether text has already reached the
user. Errors are sorted into retryable or not here, where the SDK's types are known
(a connection reset mid-stream comes as the SDK's HTTP library's error, ``httpx2``).

The web (``ModelRequest.web``) is Anthropic's server tools, ``web_search_20250305`` and
``web_fetch_20250910`` (the versions without code execution: the later ones filter pages
by running code, a tool of its own to allow), each at most ``WEB_MAX_USES`` times a
request; web fetch is sent with its beta header, as the web fetch tool page asks. The API
runs them: their ``server_tool_use`` and result blocks come back in the turn and go back
in it unchanged (``echo``), and a turn it paused (``pause_turn``) is sent back as the last
message (``Paused``), as the server tools page says. Decided: text written after a search
or a fetch starts a new paragraph (the API sends the words before and after as separate
blocks, which would otherwise run together), the same in the stream and in ``text``.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import httpx2
from anthropic.types import WebFetchTool20250910Param, WebSearchTool20250305Param
from pydantic import SecretStr

from bridge.model.catalogue import CATALOGUE, Capabilities, ModelCatalogue
from bridge.model.pricing import Usage
from bridge.model.protocol import (
    WEB_MAX_USES,
    Attachment,
    ModelRefusedRequest,
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    OnText,
    Paused,
    PromptTooLong,
    Said,
    Source,
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
# The beta the web fetch tool is sent under (the web fetch tool page).
WEB_FETCH_BETA = "web-fetch-2025-09-10"
# The blocks of a server tool's call and results: words after one start a new paragraph.
SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "web_search_tool_result",
                                "web_fetch_tool_result"})


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
        headers = api_headers(request)
        if headers:
            params["extra_headers"] = headers
        try:
            async with self._client.messages.stream(**params) as stream:
                gap = Paragraphs(on_text)
                async for event in stream:
                    if event.type == "content_block_start":
                        gap.block(event.content_block.type)
                    elif event.type == "text" and event.text:
                        await gap.write(event.text)
                message = await stream.get_final_message()
        except anthropic.APIStatusError as error:
            raise _status_error(error) from error
        except anthropic.APITimeoutError as error:
            raise ModelUnavailable("the model timed out", retryable=True) from error
        except anthropic.APIConnectionError as error:
            raise ModelUnavailable(f"cannot reach the model: {error}", retryable=True) from error
        except httpx2.TransportError as error:
            # A connection reset while the stream is read comes through the SDK as its
            # HTTP library's own error, not an APIConnectionError.
            why = str(error) or type(error).__name__
            raise ModelUnavailable(f"the connection to the model broke: {why}",
                                   retryable=True) from error
        return _result(message)

    async def aclose(self) -> None:
        await self._client.close()


class Paragraphs:
    """Streams text, a paragraph break ahead of words that follow a server tool's blocks
    (``joined_text`` joins the final message's text the same way)."""

    def __init__(self, on_text: OnText) -> None:
        self._on_text = on_text
        self._wrote = False
        self._after_tool = False

    def block(self, kind: str) -> None:
        if kind in SERVER_TOOL_BLOCKS:
            self._after_tool = True

    async def write(self, text: str) -> None:
        # Held until words come: an empty text block after a search adds no break.
        if self._after_tool and self._wrote:
            text = "\n\n" + text
        self._after_tool, self._wrote = False, True
        await self._on_text(text)


def api_headers(request: ModelRequest) -> dict[str, str]:
    """The headers a request needs beside the client's own: the web fetch beta."""
    return {"anthropic-beta": WEB_FETCH_BETA} if "fetch" in request.web else {}


def web_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """The server tools of ``request.web``, as the Messages API's tool definitions."""
    tools: list[dict[str, Any]] = []
    if "search" in request.web:
        search: WebSearchTool20250305Param = {
            "type": "web_search_20250305", "name": "web_search", "max_uses": WEB_MAX_USES}
        tools.append(dict(search))
    if "fetch" in request.web:
        # Citations on, so that what the reply takes from a page is cited to it.
        fetch: WebFetchTool20250910Param = {
            "type": "web_fetch_20250910", "name": "web_fetch", "max_uses": WEB_MAX_USES,
            "citations": {"enabled": True}}
        tools.append(dict(fetch))
    return tools


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
    if request.tools or request.web:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ] + web_tools(request)
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
        if isinstance(message, Paused):
            # The turn as it came, the last message: the API goes on with it.
            wire.append({"role": "assistant", "content": list(message.echo)})
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
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "tool_use":
            tool_input = dict(block.input) if isinstance(block.input, dict) else {}
            calls.append(ToolCall(block.id, block.name, tool_input))
    usage = message.usage
    server_tools = getattr(usage, "server_tool_use", None)
    return ModelResult(
        text=joined_text(message.content),
        echo=tuple(
            _as_sent_back(block) for block in message.content if not _empty_text(block)
        ),
        tool_calls=tuple(calls),
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
            web_searches=getattr(server_tools, "web_search_requests", None) or 0,
        ),
        stop_reason=message.stop_reason,
        model=message.model,
        sources=web_sources(message.content),
    )


def joined_text(content: list[Any]) -> str:
    """The text blocks as one text, as ``Paragraphs`` streamed them: blocks split by
    citations run on; words after a server tool's blocks start a new paragraph."""
    text, after_tool = "", False
    for block in content:
        if block.type in SERVER_TOOL_BLOCKS:
            after_tool = True
        elif block.type == "text" and block.text:
            if after_tool and text:
                text += "\n\n"
            after_tool = False
            text += block.text
    return text


def web_sources(content: list[Any]) -> tuple[Source, ...]:
    """The pages a turn rests on, each once, in this order: those its words cite (a
    search result's location), those web fetch read whole; the search results only when
    neither names any (found and used, though not cited)."""
    cited: list[Source] = []
    found: list[Source] = []
    for block in content:
        if block.type == "text":
            cited.extend(Source(c.url, c.title or c.url) for c in block.citations or ()
                         if c.type == "web_search_result_location")
        elif block.type == "web_fetch_tool_result" and block.content.type == "web_fetch_result":
            page = block.content
            cited.append(Source(page.url, getattr(page.content, "title", None) or page.url))
        elif block.type == "web_search_tool_result" and isinstance(block.content, list):
            found.extend(Source(r.url, r.title or r.url) for r in block.content
                         if r.type == "web_search_result")
    unique: dict[str, Source] = {}
    for source in cited or found:
        unique.setdefault(source.url, source)
    return tuple(unique.values())


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
