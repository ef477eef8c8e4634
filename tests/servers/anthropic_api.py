"""A loopback server that speaks the Anthropic Messages API, for the real `anthropic` SDK.

It answers ``POST /v1/messages`` with plain JSON or, when the request asks for
``"stream": true``, with the SSE event sequence Anthropic sends (message_start,
content_block_start/delta/stop, ping, message_delta, message_stop). Replies come
from a script the test pushes (text, tool_use, HTTP errors, in-stream errors,
delays); with an empty script it answers with a short text. Every request is
recorded whole: path, headers and JSON body.

It also fails the way the real API does when it is in trouble, on command: a standing
window in which every request gets 529 overloaded (or 500, with ``retry-after``)
whatever the script says (``overloaded_for``), and connections reset with no response
or in the middle of a stream (``reset_next``). What a request was billed (``billed``)
is counted the way this project reads Anthropic's pricing: a response the API finished
(a whole JSON body, or a stream to ``message_stop``) is billed its usage; an error
status, a reset or an error event is not.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers.anthropic_cache import PromptCache
from tests.servers.anthropic_rules import (
    MAX_BODY_BYTES,
    invalid_request,
    thinking_display,
    thinks,
    unknown_model,
)
from tests.servers.loopback import LoopbackHandler, LoopbackServer

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class WebPage:
    url: str
    title: str
    text: str = "What the page says."


@dataclass(frozen=True)
class WebCall:
    """A server tool call the scripted reply makes: a search (``query``, its ``pages`` as
    results) or a fetch (``pages[0]`` read whole); ``cited``: the pages its words cite."""

    tool: str  # web_search | web_fetch
    pages: tuple[WebPage, ...]
    query: str = ""
    cited: tuple[int, ...] = (0,)
    # The turn pauses after the call, before its result (``pause_turn``).
    paused: bool = False


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``status`` other than 200 makes it an HTTP error."""

    text: str = ""
    tool_use: tuple[str, dict[str, Any]] | None = None
    status: int = 200
    delay_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    # An SSE "error" event sent after the first text delta (status 200 already sent), or
    # before any text with ``error_before_text`` (the API does both).
    stream_error: str | None = None
    error_before_text: bool = False
    retry_after: str | None = "0"
    # Text is streamed in pieces of this many characters, this many seconds apart.
    chunk_chars: int = 4
    chunk_delay_s: float = 0.0
    # The stop reason the API reports (default: tool_use with a tool call, else end_turn):
    # max_tokens, refusal, model_context_window_exceeded, pause_turn, stop_sequence.
    stop_reason: str | None = None
    # An empty text block beside a tool_use, as the real API sometimes sends.
    empty_text: bool = False
    # On a model that thinks: tokens of thinking before the text (counted in max_tokens and
    # the output tokens), what it is about (its text only at display "summarized"), and a
    # redacted_thinking block after it.
    thinking_tokens: int = 300
    thinking: str = "Working out what the person needs."
    redacted_thinking: bool = False
    # An error's body beside its type: Anthropic's message and ``details``.
    error_message: str = "scripted failure"
    error_details: dict[str, Any] | None = None
    # A server tool call before the words (``web_search`` / ``web_fetch``).
    web: WebCall | None = None
    # The connection is reset after the first words (``FakeAnthropic.reset_next``).
    reset_mid_stream: bool = False


def text(content: str, **options: Any) -> Reply:
    return Reply(text=content, **options)


def tool_use(name: str, tool_input: dict[str, Any], *, preface: str = "", **options: Any) -> Reply:
    return Reply(text=preface, tool_use=(name, tool_input), **options)


def web_search(query: str, pages: list[WebPage], words: str = "", *, cited: tuple[int, ...] = (0,),
               paused: bool = False, **options: Any) -> Reply:
    """The model searches the web for ``query``, finds ``pages``, then says ``words``
    citing ``cited``; ``paused``: the API pauses after the call (its words come later)."""
    call = WebCall("web_search", tuple(pages), query, cited, paused)
    return Reply(text="" if paused else words, web=call,
                 stop_reason="pause_turn" if paused else None, **options)


def web_fetch(page: WebPage, words: str = "", *, paused: bool = False, **options: Any) -> Reply:
    """The model reads ``page`` whole, then says ``words`` citing it."""
    call = WebCall("web_fetch", (page,), cited=(0,), paused=paused)
    return Reply(text="" if paused else words, web=call,
                 stop_reason="pause_turn" if paused else None, **options)


def error(status: int, **options: Any) -> Reply:
    return Reply(status=status, **options)


def spend_limit() -> Reply:
    """The organisation's monthly spend cap (the Rate limits page): 429, no retry-after."""
    return Reply(
        status=429, retry_after=None,
        error_message=("You have reached your API usage limits: your organization has crossed"
                       " its monthly API usage threshold. You will regain access on"
                       " 2026-12-01 at 00:00 UTC."),
        error_details={"error_code": "enforced_spend_limit_reached"},
    )


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float

    def system_texts(self) -> list[str]:
        system = self.body.get("system") or []
        if isinstance(system, str):
            return [system]
        return [block["text"] for block in system]

    def conversation(self) -> list[dict[str, Any]]:
        """The messages without the turn's context blocks: a message that was only words
        reads as its plain string again."""
        plain: list[dict[str, Any]] = []
        for message in self.body.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list) and all(
                b.get("type") == "text" for b in content
            ):
                content = content[-1]["text"]
            plain.append({**message, "content": content})
        return plain

    def context_texts(self) -> list[str]:
        """The system prompt's texts, then the context blocks that head a person's message
        (every text block before the words of a message that has several)."""
        texts = self.system_texts()
        for message in self.body.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                words = [b for b in content if b.get("type") == "text"]
                texts.extend(block["text"] for block in words[:-1])
        return texts


class FakeAnthropic(LoopbackServer):
    """The server; use as a context manager. ``url`` goes to ANTHROPIC_BASE_URL."""

    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self.cache = PromptCache()
        # What was issued, to check a tool round sends it back whole: each tool_use id's
        # whole assistant content, and each signature's thinking (or redacted data).
        self.issued_content: dict[str, list[dict[str, Any]]] = {}
        self.signatures: dict[str, str] = {}
        # Each server tool block issued, by (type, id): it must come back unchanged; and
        # the calls a paused turn left to run, by id.
        self.server_blocks: dict[tuple[str, str], dict[str, Any]] = {}
        self.paused_calls: dict[str, WebCall] = {}
        # Every refusal's status and message, in order: a test that expects none says so.
        self.refusals: list[tuple[int, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # The standing overload window: until when (monotonic), with what status and
        # retry-after; and the connections to reset, with where (None: before answering).
        self._overloaded_until = 0.0
        self._overload: tuple[int, str | None] = (529, None)
        self._resets: deque[bool] = deque()
        self._reset_every = 0
        # The usage of every response the API finished (what Anthropic bills), in order.
        self.billed: list[Usage] = []
        self.overloaded_answers = 0
        self.resets_done = 0
        self._serve(self._handler_class())

    def overloaded_for(self, seconds: float, *, status: int = 529,
                       retry_after: float | None = None, reset_every: int = 0) -> None:
        """Answer every request ``status`` (529 overloaded_error, 500 api_error, 503) for
        the next ``seconds``, with ``retry-after`` when given; the script waits. With
        ``reset_every`` n, every n-th request of the window has its connection reset
        instead (an overloaded front end drops some)."""
        with self._lock:
            self._overloaded_until = time.monotonic() + seconds
            self._overload = (status, None if retry_after is None else f"{retry_after:g}")
            self._reset_every = reset_every

    def back(self) -> None:
        """End the overload window now."""
        with self._lock:
            self._overloaded_until = 0.0

    @property
    def overloaded(self) -> bool:
        with self._lock:
            return time.monotonic() < self._overloaded_until

    def reset_next(self, count: int = 1, *, mid_stream: bool = False) -> None:
        """Reset the connection of the next ``count`` requests: before any response, or
        (``mid_stream``) after a stream's first words."""
        with self._lock:
            self._resets.extend([mid_stream] * count)

    def _failure_now(self) -> tuple[str, int, str | None] | None:
        """What the next request meets instead of its reply, if anything."""
        with self._lock:
            if time.monotonic() < self._overloaded_until:
                self.overloaded_answers += 1
                if self._reset_every and self.overloaded_answers % self._reset_every == 0:
                    self.resets_done += 1
                    return ("reset", 0, None)
                return ("status", *self._overload)
            if self._resets:
                self.resets_done += 1
                return ("reset-mid" if self._resets.popleft() else "reset", 0, None)
        return None

    def _bill(self, usage: dict[str, Any]) -> None:
        with self._lock:
            self.billed.append(Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                cache_read_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
                cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            ))

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> list[RecordedRequest]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= count, timeout_s):
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def _next_reply(self, request: RecordedRequest, *, refused: bool = False) -> Reply:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
            if refused:
                return Reply()  # a refused request never reaches the model: no script used
            if self._script:
                return self._script.popleft()
        last = request.body.get("messages", [{}])[-1].get("content")
        words = [b.get("text", "") for b in last or [] if b.get("type") == "text"] if isinstance(
            last, list) else [last]
        said = words[-1] if words else "(tool results)"
        return Reply(text=f"You said: {said[:60]}")

    def _cached_usage(self, body: dict[str, Any]) -> Usage:
        """Usage as the prompt cache would report it (a reply scripted without usage)."""
        uncached, read, write = self.cache.usage(body)
        return Usage(input_tokens=uncached, output_tokens=20, cache_read_input_tokens=read,
                     cache_creation_input_tokens=write)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})


class _Handler(LoopbackHandler):
    fake: FakeAnthropic

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            self._send_json(413, _error_body(413, "Request exceeds the maximum allowed size"))
            return
        request = RecordedRequest(
            "POST",
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            json.loads(self.read_body() or b"{}"),
            time.monotonic(),
        )
        failure = None if _refusal(self.fake, request) is not None else self.fake._failure_now()
        if failure is not None and failure[0] != "reset-mid":
            with self.fake._lock:
                self.fake.requests.append(request)
                self.fake._lock.notify_all()
            if failure[0] == "reset":
                self._reset()
            else:
                self._send_json(failure[1], _error_body(failure[1], "Overloaded"),
                                retry_after=failure[2])
            return
        reply = self.fake._next_reply(request, refused=_refusal(self.fake, request) is not None)
        if failure is not None:
            reply = replace(reply, reset_mid_stream=True)
        with self.fake._lock:
            self.fake.in_flight += 1
            self.fake.max_in_flight = max(self.fake.max_in_flight, self.fake.in_flight)
        try:
            if reply.delay_s and self.fake._stopping.wait(reply.delay_s):
                return
            self._answer(request, reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer
        finally:
            with self.fake._lock:
                self.fake.in_flight -= 1

    def _answer(self, request: RecordedRequest, reply: Reply) -> None:
        refusal = _refusal(self.fake, request)
        if refusal is not None:
            reason = (_invalid(self.fake, request) if refusal == 400
                      else unknown_model(request.body) if refusal == 404 else None)
            with self.fake._lock:
                self.fake.refusals.append((refusal, reason or "refused"))
            self._send_json(refusal, _error_body(refusal, reason or "refused"))
        elif reply.status != 200:
            self._send_json(
                reply.status,
                _error_body(reply.status, reply.error_message, reply.error_details),
                retry_after=reply.retry_after,
            )
        elif request.body.get("stream"):
            self._send_stream(reply, request.body)
        else:
            message = _message(self.fake, reply, request.body)
            self._send_json(200, message)
            self.fake._bill(message["usage"])

    def _reset(self) -> None:
        """Close the connection with a TCP reset, as a proxy or a load balancer does."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _send_json(
        self, status: int, payload: dict[str, Any], retry_after: str | None = None
    ) -> None:
        headers = {"request-id": f"req_{next(self.fake._ids)}"}
        if retry_after is not None and status in (429, 529, 500, 503):
            headers["retry-after"] = retry_after
        self.send_body(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_stream(self, reply: Reply, body: dict[str, Any]) -> None:
        usage: dict[str, Any] = {}
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_{next(self.fake._ids)}")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for event, data in _stream_events(self.fake, reply, body):
                chunk = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                if event == "content_block_delta" and reply.reset_mid_stream:
                    self._reset()
                    return
                if event == "content_block_delta" and reply.chunk_delay_s:
                    self.fake._stopping.wait(reply.chunk_delay_s)
                if event == "message_start":
                    usage = dict(data["message"]["usage"])
                elif event == "message_delta":
                    usage["output_tokens"] = data["usage"]["output_tokens"]
                elif event == "message_stop":
                    self.fake._bill(usage)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading (a stopped reply)


def _refusal(fake: FakeAnthropic, request: RecordedRequest) -> int | None:
    """The status the real API would refuse this request with, if any."""
    if request.path.split("?")[0] != "/v1/messages":
        return 404
    has_key = request.headers.get("x-api-key") or request.headers.get(
        "authorization", ""
    ).startswith("Bearer ")
    if not has_key:
        return 401
    if _invalid(fake, request) is not None:
        return 400
    if unknown_model(request.body) is not None:
        return 404
    return None


def _invalid(fake: FakeAnthropic, request: RecordedRequest) -> str | None:
    return invalid_request(request.headers, request.body) or _not_sent_back_whole(
        fake, request.body
    )


def _not_sent_back_whole(fake: FakeAnthropic, body: dict[str, Any]) -> str | None:
    """Thinking must come back as it was issued (Thinking page, "Preserved thinking"): any
    thinking block with its signature unchanged, and the latest assistant message of a tool
    round block for block (an empty text block aside, which the API itself refuses)."""
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or isinstance(message.get("content"), str):
            continue
        for j, block in enumerate(message.get("content") or []):
            kind = block.get("type")
            key = (str(kind), str(block.get("id") or block.get("tool_use_id")))
            if kind in SERVER_BLOCK_TYPES and fake.server_blocks.get(key) != block:
                return (f"messages.{i}.content.{j}: `{kind}` block was not sent back as the"
                        " API returned it")
            if kind == "thinking" and fake.signatures.get(str(block.get("signature"))) != (
                block.get("thinking")
            ):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
            if kind == "redacted_thinking" and str(block.get("data")) not in fake.signatures:
                return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
    rounds = [i for i, m in enumerate(messages) if m.get("role") == "assistant"
              and any(b.get("type") == "tool_use" for b in _blocks_of(m))]
    if not rounds or rounds[-1] != len(messages) - 2:
        return None  # no tool round open: earlier turns' thinking may be left out
    latest = rounds[-1]
    sent = [b for b in _blocks_of(messages[latest]) if not _empty_text(b)]
    first_call = next(b for b in sent if b.get("type") == "tool_use")
    if thinks(body) and sent[0].get("type") not in ("thinking", "redacted_thinking"):
        return (f"messages.{latest}.content.0.type: Expected `thinking` or"
                f" `redacted_thinking`, but found `{sent[0].get('type')}`. When `thinking`"
                " is enabled, a final `assistant` message must start with a thinking block"
                " (preceeding the lastmost set of `tool_use` and `tool_result` blocks).")
    issued = fake.issued_content.get(str(first_call.get("id")))
    # A turn that paused before its tool call is sent back as one message: the call's own
    # response is its end.
    issued_sent = [b for b in issued or [] if not _empty_text(b)]
    if issued is not None and sent[len(sent) - len(issued_sent):] != issued_sent and any(
        b.get("type") in ("thinking", "redacted_thinking") for b in issued
    ):
        return (f"messages.{latest}.content: `thinking` or `redacted_thinking` blocks in the"
                " latest assistant message cannot be modified. These blocks must remain as they"
                " were in the original response.")
    return None


SERVER_BLOCK_TYPES = frozenset({"server_tool_use", "web_search_tool_result",
                                "web_fetch_tool_result"})


def _blocks_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _empty_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _error_body(
    status: int, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    inner: dict[str, Any] = {"type": ERROR_TYPES.get(status, "api_error"), "message": message}
    if details is not None:
        inner["details"] = details
    return {"type": "error", "error": inner}


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
    }


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _content(
    fake: FakeAnthropic, reply: Reply, body: dict[str, Any]
) -> tuple[list[dict[str, Any]], str | None, int]:
    """The response's blocks, the stop reason max_tokens forces (if any), output tokens.

    On a model that thinks the answer starts with a thinking block (empty text and a
    signature at the default display), and words written before a tool call come back
    inside a thinking block of their own, not as text ("What's new in Claude Opus 5.5").
    ``max_tokens`` bounds thinking and text together: what does not fit is cut. A paused
    turn sent back gets its call's result first; a web call of the reply's comes before
    its words, which cite what it found.
    """
    thinking = thinks(body)
    room = int(body.get("max_tokens") or 0)
    blocks: list[dict[str, Any]] = []
    cut: str | None = None
    used = 0
    if thinking:
        used = min(reply.thinking_tokens, room)
        blocks.append(_thinking_block(fake, reply.thinking, body))
        if reply.redacted_thinking:
            data = f"redacted_{next(fake._ids):04d}"
            fake.signatures[data] = data
            blocks.append({"type": "redacted_thinking", "data": data})
        if reply.thinking_tokens >= room:
            return blocks, "max_tokens", room
    cited = _resumed_call(fake, body, blocks)
    if reply.web is not None and _offered(body, reply.web.tool):
        cited = _web_call(fake, reply.web, body, blocks) or cited
    words = reply.text
    if thinking and reply.tool_use is not None and words:
        blocks.append(_thinking_block(fake, words, body))
        words = ""
    if words or reply.empty_text:
        if used + _tokens(words) > room:
            words, cut = words[: max(0, room - used) * 4], "max_tokens"
        used += _tokens(words)
        blocks.append({"type": "text", "text": words,
                       **({"citations": _citations(cited)} if cited and words else {})})
    if reply.tool_use is not None and cut is None:
        name, tool_input = reply.tool_use
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{next(fake._ids):04d}", "name": name,
             "input": tool_input}
        )
        used += _tokens(json.dumps(tool_input))
        fake.issued_content[blocks[-1]["id"]] = blocks
    return blocks, cut, used


def _offered(body: dict[str, Any], name: str) -> bool:
    """Whether the request offers the server tool ``name`` (a model uses no other)."""
    return any(tool.get("name") == name and tool.get("type") not in (None, "custom")
               for tool in body.get("tools") or [])


def _resumed_call(fake: FakeAnthropic, body: dict[str, Any],
                  blocks: list[dict[str, Any]]) -> WebCall | None:
    """A paused turn sent back goes on where it stopped: its call's result comes first."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant":
        return None
    for block in _blocks_of(last):
        call = fake.paused_calls.pop(str(block.get("id")), None)
        if block.get("type") == "server_tool_use" and call is not None:
            result = _web_result(fake, call, str(block["id"]), body)
            blocks.append(result)
            return call if _found(result) else None
    return None


def _web_call(fake: FakeAnthropic, call: WebCall, body: dict[str, Any],
              blocks: list[dict[str, Any]]) -> WebCall | None:
    """The call's ``server_tool_use`` block, then its result unless the turn pauses there;
    the call, when its words may cite what it found."""
    call_id = f"srvtoolu_{next(fake._ids):04d}"
    asked = {"query": call.query} if call.tool == "web_search" else {"url": call.pages[0].url}
    use = {"type": "server_tool_use", "id": call_id, "name": call.tool, "input": asked}
    fake.server_blocks[("server_tool_use", call_id)] = use
    blocks.append(use)
    if call.paused:
        fake.paused_calls[call_id] = call
        return None
    result = _web_result(fake, call, call_id, body)
    blocks.append(result)
    return call if _found(result) else None


def _web_result(fake: FakeAnthropic, call: WebCall, call_id: str,
                body: dict[str, Any]) -> dict[str, Any]:
    content: Any
    if call.tool == "web_search":
        content = [{"type": "web_search_result", "url": page.url, "title": page.title,
                    "encrypted_content": _sealed(page.text)} for page in call.pages]
    elif call.pages[0].url not in json.dumps(body.get("messages"), ensure_ascii=False):
        # Claude fetches only addresses the conversation holds (the web fetch tool page).
        content = {"type": "web_fetch_tool_result_error", "error_code": "url_not_in_prior_context"}
    else:
        page = call.pages[0]
        content = {"type": "web_fetch_result", "url": page.url,
                   "retrieved_at": "2026-11-29T08:00:00Z",
                   "content": {"type": "document", "title": page.title,
                               "source": {"type": "text", "media_type": "text/plain",
                                          "data": page.text},
                               "citations": {"enabled": True}}}
    block = {"type": f"{call.tool}_tool_result", "tool_use_id": call_id, "content": content}
    fake.server_blocks[(block["type"], call_id)] = block
    return block


def _found(result: dict[str, Any]) -> bool:
    content = result["content"]
    return isinstance(content, list) or content.get("type") == "web_fetch_result"


def _sealed(text: str) -> str:
    return "enc_" + hashlib.sha256(text.encode()).hexdigest()[:24]


def _citations(call: WebCall) -> list[dict[str, Any]]:
    """Where the words come from: search results' locations, or the fetched page's text."""
    cited = [call.pages[at] for at in call.cited if at < len(call.pages)]
    if call.tool == "web_fetch":
        return [{"type": "char_location", "cited_text": page.text, "document_index": 0,
                 "document_title": page.title, "start_char_index": 0,
                 "end_char_index": len(page.text)} for page in cited]
    return [{"type": "web_search_result_location", "url": page.url, "title": page.title,
             "cited_text": page.text, "encrypted_index": _sealed(page.url)} for page in cited]


def _thinking_block(fake: FakeAnthropic, about: str, body: dict[str, Any]) -> dict[str, Any]:
    shown = about if thinking_display(body) == "summarized" else ""
    signature = "sig_" + hashlib.sha256(f"{next(fake._ids)}:{about}".encode()).hexdigest()
    fake.signatures[signature] = shown
    return {"type": "thinking", "thinking": shown, "signature": signature}


def _message(fake: FakeAnthropic, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    content, cut, output_tokens = _content(fake, reply, body)
    calls = any(block["type"] == "tool_use" for block in content)
    usage = reply.usage if reply.usage != Usage() else fake._cached_usage(body)
    if reply.usage == Usage():
        usage = Usage(usage.input_tokens, max(output_tokens, 1), usage.cache_read_input_tokens,
                      usage.cache_creation_input_tokens)
    searched = [b["name"] for b in content if b["type"] == "server_tool_use"]
    server = ({"server_tool_use": {"web_search_requests": searched.count("web_search"),
                                   "web_fetch_requests": searched.count("web_fetch")}}
              if searched else {})
    paused = reply.stop_reason == "pause_turn" and not searched and reply.web is not None
    return {
        "id": f"msg_{next(fake._ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-test"),
        "content": content,
        # A pause scripted for a call the request did not offer never happens: the model
        # answered in words alone.
        "stop_reason": cut or (None if paused else reply.stop_reason)
        or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {**_usage(usage), **server},
    }


def _stream_events(
    fake: FakeAnthropic, reply: Reply, body: dict[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    message = _message(fake, reply, body)
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    if reply.stream_error and reply.error_before_text:
        yield "error", {"type": "error",
                        "error": {"type": reply.stream_error, "message": "scripted"}}
        return
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            for citation in block.get("citations") or []:
                yield "content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "citations_delta", "citation": citation},
                }
            pieces = [
                block["text"][i : i + reply.chunk_chars]
                for i in range(0, len(block["text"]), reply.chunk_chars)
            ]
            for number, piece in enumerate(pieces):
                yield "content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
                if number == 0 and reply.stream_error:
                    yield "error", {
                        "type": "error",
                        "error": {"type": reply.stream_error, "message": "scripted"},
                    }
                    return
        elif block["type"] == "thinking":
            yield "content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
            if block["thinking"]:
                yield "content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                }
            yield "content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "signature_delta", "signature": block["signature"]},
            }
        elif block["type"] in ("redacted_thinking", "web_search_tool_result",
                               "web_fetch_tool_result"):
            # Sent whole at its start, with no deltas (the streaming page).
            yield "content_block_start", {
                "type": "content_block_start", "index": index, "content_block": block,
            }
        else:
            yield "content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {**block, "input": {}},
            }
            yield "content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"],
                  **({"server_tool_use": message["usage"]["server_tool_use"]}
                     if "server_tool_use" in message["usage"] else {})},
    }
    yield "message_stop", {"type": "message_stop"}
