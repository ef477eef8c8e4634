"""Turns run on the bridge's own event loop, never on the loop that takes Slack's requests.

Bolt acknowledges each request on the intake loop (uvicorn's in HTTP mode, Socket
Mode's own); a listener there only records the delivery and submits work to this
runner, so a slow model call cannot delay the acks of slash commands or button clicks.
Bolt keeps no reference to what a listener starts: the runner keeps the turns' limit
and lets them finish at shutdown.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from bridge.slack.fair_slots import FairSlots

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_CONCURRENT_TURNS = 16
WORKER_THREADS = 64


class TurnRunner:
    def __init__(self, *, max_concurrent: int = MAX_CONCURRENT_TURNS) -> None:
        self._loop = asyncio.new_event_loop()
        # Every SQLite and embedding call runs in a worker thread: asyncio's default
        # pool (cores + 4) would queue a /recall behind a few writes waiting for the lock.
        self._loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(max_workers=WORKER_THREADS)
        )
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="thoth-turns", daemon=True
        )
        # Made on the loop's thread (first use): its futures belong to that loop.
        self._max_concurrent = max_concurrent
        self._slots: FairSlots | None = None
        self._in_flight: set[concurrent.futures.Future[Any]] = set()
        self._background: list[concurrent.futures.Future[Any]] = []
        self._lock = threading.Lock()
        self._closing = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def start(self) -> None:
        self._thread.start()

    def submit(
        self, work: Coroutine[Any, Any, T], *, turn: bool = True
    ) -> concurrent.futures.Future[T]:
        """Run ``work`` on the loop; returns at once.

        Turns (model calls) run at most ``max_concurrent`` at once; commands, reactions
        and clicks (``turn=False``) never wait behind them.
        """
        with self._lock:
            if self._closing:
                work.close()
                raise RuntimeError("the bridge is shutting down")
            wrapped = self._limited(work) if turn else work
            future = asyncio.run_coroutine_threadsafe(wrapped, self._loop)
            self._in_flight.add(future)
        future.add_done_callback(self._finished)
        return future

    def keep_running(self, work: Coroutine[Any, Any, object]) -> None:
        """Run ``work`` (a loop that never returns) until shutdown, which does not wait
        for it: it is cancelled once the turns in flight are done."""
        self._background.append(asyncio.run_coroutine_threadsafe(work, self._loop))

    def wait_for(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop as a task that is not a turn, and wait for it (a
        scheduler job). Shutdown waits for it like any task, then cancels it, so a job
        never holds the process past the shutdown timeout; after shutdown it is refused."""
        return self.submit(work, turn=False).result()

    def call(self, work: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``work`` on the loop and wait for its result (for startup and shutdown)."""
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout_s)

    def shutdown(
        self, timeout_s: float, *, last: Coroutine[Any, Any, object] | None = None
    ) -> int:
        """Stop taking work, let in-flight turns finish, run ``last`` (the final drain),
        then stop the loop; returns how many turns did not finish in time."""
        with self._lock:
            self._closing = True
            pending = list(self._in_flight)
        _, unfinished = concurrent.futures.wait(pending, timeout=timeout_s)
        for future in [*unfinished, *self._background]:
            future.cancel()
        if unfinished or self._background:
            # Let the cancelled tasks run their cancellation before the loop stops.
            self.call(asyncio.sleep(0.05), timeout_s=1.0)
        if last is not None:
            try:
                self.call(last, timeout_s)
            except Exception:
                log.exception("the final drain failed")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if unfinished:
            log.error("%d turns were still running at shutdown", len(unfinished))
        return len(unfinished)

    async def as_turn(self, work: Coroutine[Any, Any, T], *, who: str = "") -> T:
        """Await ``work`` within the turns' limit (from a task already on this runner), a
        slot shared fairly between people (``who``: the speaker)."""
        return await self._limited(work, who)

    async def _limited(self, work: Coroutine[Any, Any, T], who: str = "") -> T:
        if self._slots is None:
            self._slots = FairSlots(self._max_concurrent)
        async with self._slots.hold(who):
            return await work

    def _finished(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._in_flight.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("a Slack task failed", exc_info=future.exception())
