"""Fire-and-forget ingest: a bounded background queue with retries and backoff.

Turns are submitted after the reply is out and never wait for the identity backend. One
consumer sends them in the order they were said. A transient failure is retried with
exponential backoff for about five minutes in all; a refusal (4xx) is given up at once.
A backend that is away altogether (``availability.py``: its probe does not answer
either) is waited for, however long, probing every few seconds, and the turn goes as
soon as it answers; the wait does not count against the turn's tries. The queue is
bounded: a slow backend must not grow memory without bound. At shutdown ``drain()``
gives the queue a time limit and reports what it could not send.

With an outbox (``outbox.py``) every turn is also written to the database until the
backend has it: a restart or a crash is made up for on the next start (``resume``); a
turn that finds the queue full waits there and is taken up once the queue has emptied
(without an outbox, the oldest waiting turn leaves memory instead, counted); one
given up after its tries waits there too, taken up again after ``SET_ASIDE_S``, and
meanwhile that person's later turns wait behind it in the outbox rather than overtake
it. Only a refusal of the turn itself (a 4xx) removes it unsent. A refused key (401/403:
bad, expired, rotated) is not the turn's fault: every turn stays in the outbox, ingest
pauses for ``KEY_PAUSE_S`` with one log line, and the turns go once the key works again.
A retried turn is marked ``retry`` so the backend can check it does not hold it already
(a timed-out request, or one whose answer was lost, may still have been stored). A turn
of a person whose forget is still to be swept (``tombstones.py``) waits in the outbox,
and is taken up after the sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from layers.identity.availability import availability_of
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import IdentityBackend, TurnMessages
from layers.identity.tombstones import SEND, Fate, Tombstones
from layers.shared.backoff import backoff_delay
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
# Longer than a turn's tries take (about five minutes): meanwhile no other process
# (a replica, a worker) claims the outbox row this process is sending.
HELD_WHILE_SENDING_S = 900.0
# After the backend refuses the key, nothing is sent for this long (one line says so);
# then the next turn tries again.
KEY_PAUSE_S = 300.0
# A turn given up after its tries (the backend answers, but not to it) is taken up again
# from the outbox after this long, with the person's turns that waited behind it.
SET_ASIDE_S = 60.0
# A queued turn and its outbox row (None without an outbox).
Entry = tuple[int | None, TurnMessages]
# How a send ended: sent or refused for good / the key was refused / given up.
SETTLED, KEY_PAUSED, GAVE_UP = "settled", "key paused", "gave up"


@dataclass
class IngestStats:
    sent: int = 0
    failed: int = 0
    dropped: int = 0


class IngestQueue:
    def __init__(
        self,
        backend: IdentityBackend,
        *,
        capacity: int = 1000,
        attempts: int = 10,
        base_delay_s: float = 0.5,
        max_delay_s: float = 60.0,
        sleep: Sleep = asyncio.sleep,
        outbox: Offloaded[IngestOutbox] | None = None,
        send_here: bool = True,
        clock: Callable[[], float] = time.monotonic,
        tombstones: Offloaded[Tombstones] | None = None,
        set_aside_s: float = SET_ASIDE_S,
    ) -> None:
        """``send_here`` False: turns only go to the outbox, for `thoth worker` to send."""
        self._backend = backend
        self._availability = availability_of(backend)
        self._set_aside_s = set_aside_s
        # People whose earlier turn was given up for now, and how many of their turns wait
        # in the outbox: the later ones wait behind it (taken up with it), never before it.
        self._behind: dict[str, int] = {}
        self._taking_up: set[asyncio.Task[None]] = set()
        # Turns that found the queue full and wait in the outbox: taken up once it empties.
        self._pushed_out = 0
        self._outbox = outbox
        self._send_here = send_here
        self._resumed = False
        self._capacity = capacity
        self._attempts = attempts
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._sleep = sleep
        self._queue: asyncio.Queue[Entry] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._in_flight_id: int | None = None
        self._clock = clock
        self._tombstones = tombstones
        # Until when ingest waits because the backend refused the key (0: it does not).
        self._paused_until = 0.0
        self._keeping: set[asyncio.Task[None]] = set()
        self._last_kept: asyncio.Task[None] | None = None
        self.stats = IngestStats()

    def submit(self, turn: TurnMessages) -> None:
        """Queue a turn for the backend; returns at once (call from the event loop).

        The outbox row is written in a thread, never on the loop (on PostgreSQL it waits
        for the one-writer lock every replica shares); the turn joins the queue once its
        row is written, so one pushed out of a full queue is still in the outbox.
        """
        if self._outbox is None:
            self._put(self._started(), (None, turn))
            return
        keeping = asyncio.get_running_loop().create_task(self._keep(turn, self._last_kept))
        self._last_kept = keeping
        self._keeping.add(keeping)
        keeping.add_done_callback(self._keeping.discard)

    async def _keep(self, turn: TurnMessages, before: asyncio.Task[None] | None) -> None:
        assert self._outbox is not None
        if before is not None and not before.done() and before.get_loop() is (
            asyncio.get_running_loop()
        ):
            # In the order they were said: a later "I prefer X" must supersede an earlier.
            await asyncio.wait([before])
        if not self._send_here:
            await self._outbox.run(lambda box: box.add(turn))  # for `thoth worker` to send
            return
        entry_id = await self._outbox.run(lambda box: box.add(turn, hold_s=HELD_WHILE_SENDING_S))
        await self._resume_once()
        self._put(self._started(), (entry_id, turn))

    async def resume(self) -> int:
        """Start sending what an earlier run left in the outbox; returns how many wait."""
        await self._resume_once()
        return self._started().qsize()

    async def _resume_once(self) -> None:
        """Queue the outbox's turns an earlier run left, before this run's first turn."""
        if self._resumed or self._outbox is None or not self._send_here:
            return
        self._resumed = True
        # Another process may have sent some of them: each is checked first.
        for entry in await self._claim_outbox(retried=True):
            self._put(self._started(), entry)

    def _put(self, queue: asyncio.Queue[Entry], entry: Entry) -> None:
        if not queue.full():
            queue.put_nowait(entry)
            return
        if entry[0] is not None and self._outbox is not None:
            # The newest waits in the outbox (taken up once the queue has emptied), so
            # nothing queued before it is overtaken: a long outage keeps the order.
            if not self._pushed_out:
                log.warning("identity ingest queue full; the turns that follow wait in the"
                            " outbox until it empties")
            self._pushed_out += 1
            self._let_go_later(entry[0])
            return
        self.stats.dropped += 1
        # Without an outbox memory is the only place: the oldest turn is the one lost.
        dropped, _ = queue.get_nowait()
        queue.task_done()
        self._let_go_later(dropped)
        log.warning("identity ingest queue full; the oldest turn left memory")
        queue.put_nowait(entry)

    async def drain(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the queue to empty; returns the turns left unsent."""
        if self._keeping:
            # Turns whose outbox row is being written: each joins the queue when it is.
            await asyncio.wait(set(self._keeping), timeout=timeout_s)
        if self._queue is None or self._worker is None:
            return self.stats.failed + self.stats.dropped
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout_s)
        left = self._queue.qsize() + self._in_flight
        # Read before the cancelled worker's ``finally`` clears it (at the next await).
        in_flight = self._in_flight_id
        self._worker.cancel()
        for taking_up in self._taking_up:
            taking_up.cancel()
        for entry_id, _ in _take_all(self._queue):
            await self._let_go(entry_id)
        await self._let_go(in_flight)
        # A later submit (a process that goes on after draining) starts a fresh queue.
        self._queue, self._worker = None, None
        # The caller says it (chat in its one closing line, serve in its log): every one
        # of them is still in the outbox, for the next start.
        unsent = (left + self._pushed_out + sum(self._behind.values()) + self.stats.failed
                  + self.stats.dropped)
        if unsent:
            log.info("identity ingest: %d turns not sent (%s)", unsent, self.stats)
        return unsent

    def _started(self) -> asyncio.Queue[Entry]:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._worker is None or self._worker.get_loop() is not loop:
            # First use, or the loop that ran the worker is gone (one asyncio.run after
            # another): carry over what was waiting, on a queue of this loop.
            waiting = _take_all(self._queue) if self._queue is not None else []
            self._queue = asyncio.Queue(self._capacity)
            for entry in waiting:
                self._put(self._queue, entry)
            self._worker = loop.create_task(self._work(self._queue))
        elif self._worker.done():
            self._worker = loop.create_task(self._work(self._queue))
        return self._queue

    async def _work(self, queue: asyncio.Queue[Entry]) -> None:
        while True:
            entry_id, turn = await queue.get()
            self._in_flight, self._in_flight_id = 1, entry_id
            try:
                if entry_id is not None and turn.person.key in self._behind:
                    await self._let_go(entry_id)  # taken up after the turn it follows
                    self._behind[turn.person.key] += 1
                    continue
                fate = await self._fate(turn)
                if fate.wait_until is not None and entry_id is not None and self._outbox:
                    await self._outbox.run(IngestOutbox.hold, entry_id, fate.wait_until)
                    continue
                # Without an outbox a turn cannot wait out a forget's sweep: it is not sent.
                ended = SETTLED if fate != SEND else await self._send(turn)
                if entry_id is not None and self._outbox:
                    if ended == SETTLED:
                        await self._outbox.run(IngestOutbox.remove, entry_id)
                    elif ended == GAVE_UP:
                        # Counted, so whoever sends it next checks the backend does not
                        # hold it already (a try may have landed before its answer was lost).
                        await self._outbox.run(IngestOutbox.retry_later, entry_id, _free_now)
                        self._set_aside(turn)
                    else:
                        await self._let_go(entry_id)
                elif ended == GAVE_UP:
                    self.stats.failed += 1  # no outbox to wait in: lost
            finally:
                self._in_flight, self._in_flight_id = 0, None
                queue.task_done()
            if self._pushed_out and queue.empty():
                # Their rows are freed in the outbox (a long outage filled the queue).
                self._pushed_out = 0
                if self._keeping:
                    await asyncio.wait(set(self._keeping))
                await self.take_up_outbox()

    async def _let_go(self, entry_id: int | None) -> None:
        """This process will not send the turn: free its outbox row for the next claim
        (a worker's, or this process's next start)."""
        if entry_id is not None and self._outbox is not None:
            await self._outbox.run(lambda box: box.release(entry_id))

    def _let_go_later(self, entry_id: int | None) -> None:
        """``_let_go`` from the loop's sync code, as a task ``drain`` waits for."""
        if entry_id is not None and self._outbox is not None:
            letting_go = asyncio.get_running_loop().create_task(self._let_go(entry_id))
            self._keeping.add(letting_go)
            letting_go.add_done_callback(self._keeping.discard)

    def _set_aside(self, turn: TurnMessages) -> None:
        """The turn failed its tries while the backend answered: its row is free in the
        outbox; this person's later turns go there too, and all of them are taken up,
        in order, after ``set_aside_s``."""
        person = turn.person.key
        if person in self._behind:
            self._behind[person] += 1
            return
        self._behind[person] = 1

        async def later() -> None:
            await self._sleep(self._set_aside_s)
            self._behind.pop(person, None)
            await self.take_up_outbox()

        taking_up = asyncio.get_running_loop().create_task(later())
        self._taking_up.add(taking_up)
        taking_up.add_done_callback(self._taking_up.discard)

    async def _fate(self, turn: TurnMessages) -> Fate:
        if self._tombstones is None:
            return SEND
        return await self._tombstones.run(lambda stones: stones.fate(turn))

    async def take_up_outbox(self) -> int:
        """Queue the outbox's free turns (those that waited out a forget's sweep, or a
        retry time); returns how many."""
        if self._outbox is None or not self._send_here:
            return 0
        await self._resume_once()
        queue = self._started()
        free = await self._claim_outbox(retried=False)
        for entry in free:
            self._put(queue, entry)
        return len(free)

    async def _claim_outbox(self, *, retried: bool) -> list[Entry]:
        """The outbox's free turns, held for this process; ``retried``: each may have been
        sent already (a restart), so the backend checks first."""
        assert self._outbox is not None
        claimed = await self._outbox.run(lambda box: box.claim(hold_s=HELD_WHILE_SENDING_S))
        return [(entry_id, replace(turn, retry=turn.retry or retried))
                for entry_id, turn in claimed]

    async def _send(self, turn: TurnMessages) -> str:
        """``SETTLED`` (sent, or refused for good), ``KEY_PAUSED`` or ``GAVE_UP``."""
        if self._clock() < self._paused_until:
            self.stats.failed += 1
            return KEY_PAUSED  # kept in the outbox: the key was refused a moment ago
        attempt, tried = 1, False
        while True:
            try:
                # A turn tried before may be stored already (the answer was lost).
                await self._backend.ingest(replace(turn, retry=turn.retry or tried))
                self.stats.sent += 1
                return SETTLED
            except asyncio.CancelledError:
                raise
            except Exception as error:
                tried = True
                if key_refused(error):
                    self._paused_until = self._clock() + KEY_PAUSE_S
                    self.stats.failed += 1
                    log.error("the identity backend refused the API key (%s): ingest paused"
                              " for %.0f s; every turn is kept in the outbox and sent once"
                              " the key works (check HONCHO_API_KEY)", _status(error),
                              KEY_PAUSE_S)
                    return KEY_PAUSED
                if not refused(error) and self._availability is not None and (
                    await self._availability.wait_until_up()
                ):
                    continue  # the backend was away, not the turn at fault: at once again
                if refused(error) or attempt == self._attempts:
                    # Counted as failed when refused; a turn given up waits in the outbox
                    # (``_work`` counts it as failed without one).
                    if refused(error):
                        self.stats.failed += 1
                    log.error(
                        "identity ingest for session %s failed after %d attempts: %s",
                        turn.session_id,
                        attempt,
                        described(error),
                    )
                    return SETTLED if refused(error) else GAVE_UP
                delay = backoff_delay(attempt, base_s=self._base_delay_s, max_s=self._max_delay_s)
                # A retry is routine (-v shows it); a turn given up is an error, above.
                log.info("identity ingest failed (%s); retry in %.1fs", described(error), delay)
                await self._sleep(delay)
                attempt += 1


def refused(error: Exception) -> bool:
    """A 4xx other than 401/403/408/429: the backend will refuse this turn however often
    it is sent."""
    status = _status(error)
    return isinstance(status, int) and 400 <= status < 500 and status not in (
        401, 403, 408, 429)


def key_refused(error: Exception) -> bool:
    """401/403: the key is bad, expired or rotated, not the turn."""
    return _status(error) in (401, 403)


def described(error: Exception) -> str:
    """An error as a log line may carry it: its kind and status, never its message, which
    can echo what a person said (Honcho's 422 quotes the refused text)."""
    status = _status(error)
    return f"{type(error).__name__}{f' {status}' if status else ''}"


def _status(error: Exception) -> int | None:
    status = getattr(error, "status_code", None) or getattr(error, "status", None)
    return status if isinstance(status, int) else None


def _free_now(failures: int) -> float:
    return 0.0


def _take_all(queue: asyncio.Queue[Entry]) -> list[Entry]:
    """Everything waiting, taken off ``queue`` as done (its ``join`` counts none of it)."""
    items: list[Entry] = []
    while not queue.empty():
        items.append(queue.get_nowait())
        queue.task_done()
    return items
