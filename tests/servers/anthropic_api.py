"""A loopback server that speaks the Anthropic Messages API, for the real `anthropic` SDK.

It answers ``POST /v1/messages`` with plain JSON or, when the request asks for
``"stream": true``, with the SSE event sequence Anthropic sends (message_start,
content_block_start/delta/stop, ping, message_delta, message_stop). Replies come
from a script the test pushes (text, tool_use, HTTP errors, in-stream errors,
delays); with an empty script it answers with a short text. Every request is
recorded whole: path, headers and JSON body.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers.anthropic_cache import PromptCache
from tests.servers.anthropic_rules import MAX_BODY_BYTES, invalid_request, unknown_model
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


def text(content: str, **options: Any) -> Reply:
    return Reply(text=content, **options)


def tool_use(name: str, tool_input: dict[str, Any], *, preface: str = "", **options: Any) -> Reply:
    return Reply(text=preface, tool_use=(name, tool_input), **options)


def error(status: int, **options: Any) -> Reply:
    return Reply(status=status, **options)


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


class FakeAnthropic(LoopbackServer):
    """The server; use as a context manager. ``url`` goes to ANTHROPIC_BASE_URL."""

    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Condition()
        self._ids = itertools.count(1)
        self.cache = PromptCache()
        self.in_flight = 0
        self.max_in_flight = 0
        self._serve(self._handler_class())

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
        said = last if isinstance(last, str) else "(tool results)"
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
        reply = self.fake._next_reply(request, refused=_refusal(request) is not None)
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
        refusal = _refusal(request)
        if refusal is not None:
            reason = (invalid_request(request.headers, request.body) if refusal == 400
                      else unknown_model(request.body) if refusal == 404 else None)
            self._send_json(refusal, _error_body(refusal, reason or "refused"))
        elif reply.status != 200:
            self._send_json(
                reply.status,
                _error_body(reply.status, "scripted failure"),
                retry_after=reply.retry_after,
            )
        elif request.body.get("stream"):
            self._send_stream(reply, request.body)
        else:
            self._send_json(200, _message(self.fake, reply, request.body))

    def _send_json(
        self, status: int, payload: dict[str, Any], retry_after: str | None = None
    ) -> None:
        headers = {"request-id": f"req_{next(self.fake._ids)}"}
        if retry_after is not None and status in (429, 529, 500):
            headers["retry-after"] = retry_after
        self.send_body(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_stream(self, reply: Reply, body: dict[str, Any]) -> None:
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
                if event == "content_block_delta" and reply.chunk_delay_s:
                    self.fake._stopping.wait(reply.chunk_delay_s)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading (a stopped reply)


def _refusal(request: RecordedRequest) -> int | None:
    """The status the real API would refuse this request with, if any."""
    if request.path.split("?")[0] != "/v1/messages":
        return 404
    has_key = request.headers.get("x-api-key") or request.headers.get(
        "authorization", ""
    ).startswith("Bearer ")
    if not has_key:
        return 401
    if invalid_request(request.headers, request.body) is not None:
        return 400
    if unknown_model(request.body) is not None:
        return 404
    return None


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
    }


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
    }


def _content(fake: FakeAnthropic, reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or reply.empty_text:
        blocks.append({"type": "text", "text": reply.text})
    if reply.tool_use is not None:
        name, tool_input = reply.tool_use
        blocks.append(
            {"type": "tool_use", "id": f"toolu_{next(fake._ids):04d}", "name": name,
             "input": tool_input}
        )
    return blocks


def _message(fake: FakeAnthropic, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"msg_{next(fake._ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-test"),
        "content": _content(fake, reply),
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_use else "end_turn"),
        "stop_sequence": None,
        "usage": _usage(reply.usage if reply.usage != Usage() else fake._cached_usage(body)),
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
        "usage": {"output_tokens": reply.usage.output_tokens},
    }
    yield "message_stop", {"type": "message_stop"}
