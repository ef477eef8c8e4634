"""HTTP mode: Slack's requests on ``POST /slack/events``, verified and answered by Bolt.

A threading server: each request is parsed, handed to ``App.dispatch`` (which
checks the signature and acknowledges at once) and answered; the work itself
goes to the turn runner.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from slack_bolt import App
from slack_bolt.request import BoltRequest

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# Slack's own payloads are far smaller; a larger body is refused before it is read.
MAX_BODY_BYTES = 1_000_000


class SlackHttpServer:
    def __init__(self, app: App, *, host: str = "0.0.0.0", port: int = 3000) -> None:
        handler = type("Handler", (_Handler,), {"bolt": app})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    bolt: App
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self._reply(200 if path == "/health" else 404, {}, b"ok" if path == "/health" else b"")

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if url.path != EVENTS_PATH:
            self._reply(404, {}, b"")
            return
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self._reply(413, {}, b"payload too large")
            return
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        headers: dict[str, str | list[str]] = {
            key.lower(): [value] for key, value in self.headers.items()
        }
        response = self.bolt.dispatch(
            BoltRequest(body=body, query=url.query, headers=headers)  # type: ignore[arg-type]
        )
        out_headers = {
            key: str(value[0] if isinstance(value, list | tuple) else value)
            for key, value in response.headers.items()
        }
        self._reply(response.status, out_headers, (response.body or "").encode())

    def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
