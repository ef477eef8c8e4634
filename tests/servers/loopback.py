"""What every loopback test server shares: 127.0.0.1, port 0, a thread, a clean stop."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackHandler(BaseHTTPRequestHandler):
    """The HTTP of every fake: keep-alive HTTP/1.1, no access log, whole bodies."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_body(
        self,
        status: int,
        data: bytes,
        content_type: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("content-type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that closes its keep-alive connection (or times out) is normal here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    """Serves ``handler`` on a free loopback port while used as a context manager."""

    url_path = ""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._stopping = threading.Event()
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.url_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._release_waiters()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _release_waiters(self) -> None:
        """Wake requests held on purpose (delays, hangs) so the stop does not wait on them."""
