"""What the MCP server serves, opened once, on whichever thread first needs it.

Decided: `thoth mcp` answers its client's ``initialize`` as soon as the SDK is loaded,
and opens the memory (the app's imports and database: most of a start) on a worker
thread beside it (``bridge/cli/mcp.py``). A client that starts it (Claude Code, Cursor)
counts the handshake against its start-up, and a server that answers it only once
everything is loaded took 1.3–1.9 s (bench/mcp_start.py). Every request that reads the
memory (``tools/list``, a call, a resource) awaits the opening, so none is answered
from a half-open memory. Over HTTP the app is open before the first request:
``Opening.of``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")
U = TypeVar("U")


class Opening(Generic[T]):
    def __init__(self, open_it: Callable[[], T]) -> None:
        self._open_it = open_it
        self._lock = threading.Lock()
        self._opened: list[T] = []  # empty until open: T itself may be None

    @classmethod
    def of(cls, opened: T) -> Opening[T]:
        """Already open."""
        opening = cls(lambda: opened)
        opening._opened.append(opened)
        return opening

    def then(self, make: Callable[[T], U]) -> Opening[U]:
        """What ``make`` builds of this once it is open, itself opened once: at once if
        this is open already (over HTTP a part that cannot be built fails the start)."""
        if self._opened:
            return Opening.of(make(self._opened[0]))
        return Opening(lambda: make(self.opened()))

    @property
    def is_open(self) -> bool:
        return bool(self._opened)

    def opened(self) -> T:
        """Open it here, or wait for the thread that is opening it; an opening that
        failed is tried again by the next caller, and raises there too."""
        with self._lock:
            if not self._opened:
                self._opened.append(self._open_it())
            return self._opened[0]

    async def __call__(self) -> T:
        """Open, on a worker thread: the server's event loop answers the client meanwhile."""
        if self._opened:
            return self._opened[0]
        return await anyio.to_thread.run_sync(self.opened)
