"""One HTTP server for every way in over the web — Slack's endpoint, the console, MCP:
an ASGI app served by uvicorn in a thread of its own.

Why uvicorn and starlette: a production ASGI server the Python world already runs
behind load balancers (a listen backlog of 2 048 where ``http.server`` had 5, HTTP/1.1
keep-alive, a body it did not read never parsed as a second request, graceful
shutdown).
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import uvicorn
from starlette.applications import Starlette

from bridge.web.guarded_http import guarded_h11
from layers.shared.errors import ConfigurationError

START_TIMEOUT_S = 10.0
GRACEFUL_SHUTDOWN_S = 10
# Connections and requests at once before new requests get 503 (Slack retries those).
# uvicorn counts open connections, half-open ones too: room for a burst of deliveries
# beside the half-open ones a client may keep for a moment (guarded_http.py).
MAX_CONCURRENT_REQUESTS = 1000
# Slack sends a request's headers at once; a connection still without them after this is
# not Slack. One address may hold this many such connections (its oldest goes first).
HEADER_TIMEOUT_S = 5.0
MAX_HALF_OPEN_PER_CLIENT = 20


# Work that runs as long as the server does (entered at startup, left at shutdown).
Running = Callable[[], AbstractAsyncContextManager[None]]


Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def lifespan_of(running: Running | None) -> Lifespan | None:
    """A Starlette lifespan that keeps ``running`` going while the server serves."""
    if running is None:
        return None

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with running():
            yield

    return lifespan


class WebServer:
    """An ASGI app served by uvicorn in a thread of its own, guarded against connections
    that never finish a request (``guarded_http.py``): Slack's endpoint, the console."""

    def __init__(self, app: Starlette, *, host: str, port: int) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            # The app's startup and shutdown work, if it has any (MCP's sessions):
            # a Starlette app without a lifespan of its own starts and stops at once.
            lifespan="on",
            log_config=None,  # logging is configured once, in main()
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            limit_concurrency=MAX_CONCURRENT_REQUESTS,
            http=guarded_h11(header_timeout_s=HEADER_TIMEOUT_S,
                             max_half_open=MAX_HALF_OPEN_PER_CLIENT),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="thoth-http", daemon=True)

    @property
    def port(self) -> int:
        sockets = self._server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    def start(self) -> None:
        """Start serving; returns once the socket listens (raises if it cannot)."""
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                config = self._server.config
                raise ConfigurationError(
                    f"cannot listen on {config.host}:{config.port} (the address is in use, or"
                    " not one of this machine's): choose another with --port or --host"
                )
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish, then return."""
        self._server.should_exit = True
        self._thread.join(timeout=GRACEFUL_SHUTDOWN_S + 5)
