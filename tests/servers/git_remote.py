"""A git remote on 127.0.0.1 that stops answering on command (issue 55, fault 6).

A bare repository served over git's smart HTTP (``git http-backend`` run as CGI, as a
real git server runs it), at ``url`` = ``http://127.0.0.1:PORT/NAME.git``. On command
it fails the two ways a real remote does:

- ``hang()``: connections are accepted and the requests read, and nothing is ever
  answered (a stuck proxy, a half-dead server): git waits until it is killed.
- ``refuse()``: nothing listens on the port any more (connection refused).

``back()`` serves the repository again on the same port; ``down_for(seconds)`` does it
by itself after a while.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Self

from tests.servers.loopback import LoopbackHandler, QuietServer

UP, HANG, REFUSE = "up", "hang", "refuse"


class GitRemote:
    def __init__(self, bare: Path) -> None:
        self.bare = bare
        self._mode = UP
        self._answer = threading.Event()  # set while up: held requests are let go
        self._answer.set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.requests = 0  # answered or held, for a test to see git tried
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/{self.bare.name}"

    @property
    def mode(self) -> str:
        return self._mode

    def __enter__(self) -> Self:
        self._listen()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._answer.set()
        self._close()

    def hang(self) -> None:
        with self._lock:
            self._reopen_if_refused()
            self._mode = HANG
            self._answer.clear()

    def refuse(self) -> None:
        with self._lock:
            self._mode = REFUSE
            self._answer.set()  # what was held ends, unanswered: the server is gone
            self._close()

    def back(self) -> None:
        with self._lock:
            self._reopen_if_refused()
            self._mode = UP
            self._answer.set()

    def down_for(self, seconds: float, how: str = HANG) -> None:
        (self.hang if how == HANG else self.refuse)()
        self._timer = threading.Timer(seconds, self.back)
        self._timer.daemon = True
        self._timer.start()

    def _reopen_if_refused(self) -> None:
        if self._server is None:
            self._listen()

    def _listen(self) -> None:
        remote = self

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:
                remote._handle(self)

            def do_POST(self) -> None:
                remote._handle(self)

        server = QuietServer(("127.0.0.1", self._port), Handler, bind_and_activate=False)
        server.allow_reuse_address = True
        server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.server_bind()
        server.server_activate()
        self._port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def _close(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def _handle(self, request: LoopbackHandler) -> None:
        body = _body(request)
        self.requests += 1
        if self._mode != UP:
            # Read, never answered: git sits on the connection until it is killed.
            self._answer.wait()
            request.close_connection = True
            return
        self._serve(request, body)

    def _serve(self, request: LoopbackHandler, body: bytes) -> None:
        path, _, query = request.path.partition("?")
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.bare.parent),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": request.command,
            "CONTENT_TYPE": request.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            # Pushing over HTTP is off unless a user is known or it is turned on.
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.receivepack", "GIT_CONFIG_VALUE_0": "true",
        }
        if request.headers.get("content-encoding"):
            environment["HTTP_CONTENT_ENCODING"] = request.headers["content-encoding"]
        if request.headers.get("git-protocol"):
            environment["GIT_PROTOCOL"] = request.headers["git-protocol"]
        done = subprocess.run(["git", "http-backend"], input=body, env=environment,
                              capture_output=True, check=False, timeout=60)
        ends = [(at, len(mark)) for mark in (b"\r\n\r\n", b"\n\n")
                if (at := done.stdout.find(mark)) >= 0]
        at, length = min(ends) if ends else (len(done.stdout), 0)
        head, data = done.stdout[:at], done.stdout[at + length:]
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name and name.lower() != "content-length":
                headers[name.strip()] = value.strip()
        content_type = headers.pop("Content-Type", None)
        request.send_body(status, data, content_type, headers)


def _body(request: LoopbackHandler) -> bytes:
    if request.headers.get("transfer-encoding", "").lower() != "chunked":
        return request.read_body()
    chunks: list[bytes] = []
    while True:
        size = int(request.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            request.rfile.readline()
            return b"".join(chunks)
        chunks.append(request.rfile.read(size))
        request.rfile.readline()
