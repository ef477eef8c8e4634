"""uvicorn's HTTP/1.1 protocol, guarded against connections that never finish a request.

uvicorn counts every open connection against ``limit_concurrency`` and has no deadline
for a request's headers: 520 connections trickling headers (slowloris) held every slot,
and each valid delivery was answered 503 for as long as they lasted. Here a connection
must finish its headers within ``header_timeout_s`` or is closed, and one client may hold
at most ``max_half_open`` connections that have not: past that its oldest are closed —
only those waiting longer than ``GRACE_S``, since a burst of valid deliveries from one
address (a proxy) opens many at once and sends their headers a moment later — so a
valid delivery from the same address still gets in.
The body has its own deadline in the handler (``http_server.BODY_TIMEOUT_S``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

# A connection is half-open for a moment before its headers arrive; only one waiting
# longer than this may be closed to make room.
GRACE_S = 1.0


class GuardedH11(H11Protocol):
    """The protocol; ``guarded_h11`` makes a subclass for one server, with its limits and
    its own record of half-open connections."""

    header_timeout_s = 5.0
    max_half_open = 20
    # Per client address, its connections still waiting for headers, oldest first.
    half_open: dict[str, OrderedDict[int, GuardedH11]] = {}
    _deadline: asyncio.TimerHandle | None = None
    _address = ""
    _opened = 0.0
    # The last request answered on this connection (None before the first).
    _answered: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address = self.client[0] if self.client else ""
        waiting = self.half_open.setdefault(self._address, OrderedDict())
        waiting[id(self)] = self
        self._opened = self.loop.time()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)
        while len(waiting) > self.max_half_open:
            oldest = next(iter(waiting.values()))
            if self.loop.time() - oldest._opened < GRACE_S:
                break
            log.warning("closing a connection from %s that sent no request in time"
                        " (%d half-open)", self._address, self.max_half_open)
            oldest._close_waiting()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._answered:
            self._headers_arrived()

    def on_response_complete(self) -> None:
        answered = self.cycle
        super().on_response_complete()
        self._answered = answered
        if self.transport.is_closing() or self.cycle is not answered:
            return  # closing, or a pipelined request is already under way
        # Kept alive for the next request: its headers are held to the same deadline.
        self.half_open.setdefault(self._address, OrderedDict())[id(self)] = self
        self._opened = self.loop.time()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_arrived()
        super().connection_lost(exc)

    def _headers_arrived(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        waiting = self.half_open.get(self._address)
        if waiting is not None:
            waiting.pop(id(self), None)
            if not waiting:
                del self.half_open[self._address]

    def _too_slow(self) -> None:
        if self.cycle is None or self.cycle is self._answered:
            self._close_waiting()

    def _close_waiting(self) -> None:
        self._headers_arrived()
        self.transport.close()


def guarded_h11(*, header_timeout_s: float, max_half_open: int) -> type[GuardedH11]:
    """The protocol class for one server (``uvicorn.Config(http=...)``)."""
    return type("GuardedH11", (GuardedH11,), {
        "header_timeout_s": header_timeout_s, "max_half_open": max_half_open,
        "half_open": {},
    })
