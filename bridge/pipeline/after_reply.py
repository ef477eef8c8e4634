"""The writes that follow a reply: transcript (L1), model spend, the episode (L3) and
which episodes the turn recalled.

They run after the reply is shown, never before it, and a failure is logged and
retried — never shown to the user. The transcript is written before the
session's next turn may start (that turn reads it); the episode is written in
the background, and ``drain()`` waits for what is still pending at shutdown.

On a full disk each write is given up at once, in one line (``write_retried``): the others
are still tried (a smaller one may fit), and the next turn's go through as soon as there
is room.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.episodic.recall_uses import RecallUse
from layers.identity.ingest_queue import IngestQueue
from layers.identity.protocol import TurnMessages
from layers.shared.offloaded import Offloaded
from layers.shared.storage.retried import Sleep, write_retried
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn

log = logging.getLogger(__name__)

# About a minute in all: a busy SQLite file is free a moment later, and a PostgreSQL
# restart during a deploy (or a failover) is back within it (issue 55).
RETRY_DELAYS_S: tuple[float, ...] = (0.2, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


class AfterReply:
    def __init__(
        self,
        transcript: Offloaded[TranscriptStore],
        sessions: Offloaded[SessionStore],
        episodic: Offloaded[EpisodicMemory] | None,
        identity: IngestQueue | None = None,
        *,
        retry_delays_s: Sequence[float] = RETRY_DELAYS_S,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._transcript = transcript
        self._sessions = sessions
        self._episodic = episodic
        self._identity = identity
        self._delays = tuple(retry_delays_s)
        self._sleep = sleep
        self._pending: set[asyncio.Task[bool]] = set()

    async def record_turn(self, session_id: str, turn: TranscriptTurn) -> bool:
        """Append the turn to the transcript and touch the session (the model's spend
        is already in the ledger: ``MeteredModel``). False if the writes failed for good.
        """
        appended = False

        async def write() -> None:
            nonlocal appended
            # Two transactions: a retry after the touch failed must not append twice.
            if not appended:
                await self._transcript.run(
                    lambda transcript: transcript.append(session_id, turn))
                appended = True
            await self._sessions.run(lambda sessions: sessions.touch(session_id))

        # Decided: a database away for longer than the tries loses this turn's transcript
        # (logged), rather than the turn being run again: the reply was seen, and a turn
        # run again would be asked of the model twice and run its tools twice.
        return await self._retried(f"transcript of session {session_id}", write)

    def remember(self, episode: Episode,
                 completed: Callable[[Episode], Awaitable[Episode]] | None = None) -> None:
        """Store the episode in the background (no-op when episodic memory is off);
        ``completed`` first adds what is known only after the reply (its images'
        descriptions), once, whatever the retries of the write."""
        episodic = self._episodic
        if episodic is None:
            return
        if completed is None:
            self._in_background(
                f"episode {episode.id}",
                lambda: episodic.run(lambda memory: memory.remember([episode])))
            return
        complete = completed

        async def complete_then_store() -> bool:
            try:
                whole = await complete(episode)
            except Exception:
                # What the reply added is lost, not the episode.
                log.exception("episode %s is kept without what follows the reply", episode.id)
                whole = episode
            return await self._retried(f"episode {episode.id}", lambda: episodic.run(
                lambda memory: memory.remember([whole])))

        self._track(asyncio.create_task(complete_then_store()))

    def _in_background(self, what: str, write: Callable[[], Awaitable[object]]) -> None:
        self._track(asyncio.create_task(self._retried(what, write)))

    def _track(self, task: asyncio.Task[bool]) -> None:
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def recalled(self, episode_ids: Sequence[str], use: RecallUse) -> None:
        """Record, in the background, that a turn put these episodes before the model."""
        episodic = self._episodic
        if episodic is None or not episode_ids:
            return
        ids = list(episode_ids)
        self._in_background(
            f"recall use of session {use.session_id}",
            lambda: episodic.run(lambda memory: memory.uses.record(ids, use)))

    def saw(self, session_id: str, blocks: Sequence[tuple[str, str]], at: float) -> None:
        """Keep, in the background, what the model saw this turn (the console shows it)."""
        kept = list(blocks)
        self._in_background(
            f"context of session {session_id}",
            lambda: self._sessions.run(
                lambda sessions: sessions.keep_context(session_id, kept, at)))

    def learn(self, turn: TurnMessages) -> None:
        """Hand the turn to the identity layer's queue (no-op when L2 is off)."""
        if self._identity is not None:
            self._identity.submit(turn)

    async def drain(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for background writes; returns how many did not finish."""
        if not self._pending:
            return 0
        _, unfinished = await asyncio.wait(set(self._pending), timeout=timeout_s)
        if unfinished:
            log.error("%d background writes did not finish before shutdown", len(unfinished))
        return len(unfinished)

    async def _retried(self, what: str, write: Callable[[], Awaitable[object]]) -> bool:
        return await write_retried(what, write, delays_s=self._delays, sleep=self._sleep)
