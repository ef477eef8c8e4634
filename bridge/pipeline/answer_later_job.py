"""The job that answers the turns queued while the model was overloaded
(``answer_later.py`` says what is queued and why): every `thoth serve` runs it every
ANSWER_LATER_EVERY_S; each queued turn is claimed by one process at a time.

One round claims the due rows, each the oldest of its conversation (``AT_ONCE`` when
the model answers, one as the circuit's probe while it is still overloaded, none before
the next probe is due), runs each through the pipeline again with a sink that collects
the reply, has it posted in its thread (``Post``: ``answer_later_slack.py``) and deletes
the row. Still overloaded, the row goes back with ``not_before`` a probe interval on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bridge.pipeline.answer_later import REPLAYING, Replay, turn_of
from bridge.pipeline.answer_later_store import AnswerLaterStore, Waiting
from bridge.pipeline.pipeline import TurnPipeline
from bridge.pipeline.reply_sink import CollectedReply
from bridge.pipeline.turn import Turn
from bridge.pipeline.web_access import with_sources
from layers.shared.errors import DatabaseAway
from layers.shared.offloaded import Offloaded
from layers.shared.redaction import redact
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore

log = logging.getLogger(__name__)

# Rows answered at once by one process (each a model call): the API has just come back.
AT_ONCE = 8
# Longer than a turn takes: a process that dies answering lets its rows go after this.
HOLD_S = 300.0
# A row that fails for another reason than the overload (Slack refuses the post, a bug)
# is tried again later and later, up to this many times, then given up with an error
# line: an answer that can never be posted must not be tried every few seconds for ever.
MAX_FAILURES = 8
LONGEST_WAIT_S = 600.0


@dataclass(frozen=True)
class Answered:
    """A queued turn's answer, to post in its thread."""

    turn: Turn
    text: str
    session_id: str
    episode_id: str | None


# Posts an answer in its thread; raises when it could not (the row stays queued).
Post = Callable[[Answered], Awaitable[None]]
# Whether the model may be asked now: "go" (closed), "probe" (one may try), "wait".
Ready = Callable[[], str]


class AnswerLaterJob:
    """One round: answer the queued turns that are due, as many as the model allows."""

    def __init__(self, store: Offloaded[AnswerLaterStore], pipeline: TurnPipeline,
                 sessions: Offloaded[SessionStore], transcript: Offloaded[TranscriptStore],
                 post: Post, *, ready: Ready = lambda: "go", probe_every_s: float = 5.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._pipeline = pipeline
        self._sessions = sessions
        self._transcript = transcript
        self._post = post
        self._ready = ready
        self._probe_every_s = probe_every_s
        self._clock = clock

    async def __call__(self) -> list[str]:
        """Answer what is due; the conversations answered (their session keys)."""
        answered: list[str] = []
        while True:
            state = self._ready()
            if state == "wait":
                return answered
            try:
                claimed = await self._store.run(AnswerLaterStore.claim,
                                                limit=AT_ONCE if state == "go" else 1,
                                                hold_s=HOLD_S)
            except DatabaseAway:
                return answered  # said once by the registry of failing services
            if not claimed:
                return answered
            results = await asyncio.gather(*(self._answer(row) for row in claimed))
            answered.extend(row.session_key for row, done in zip(claimed, results,
                                                                  strict=True) if done)
            if not all(results):
                return answered  # still overloaded: the next round probes again

    async def _answer(self, row: Waiting) -> bool:
        """Answer ``row`` and post it; False when it stays queued."""
        turn = turn_of(row.turn)
        try:
            answered = await self._recorded(turn) or await self._run(row, turn)
            if answered is None:
                await self._again(row, self._clock() + self._probe_every_s, failed=False)
                return False
            await self._post(answered)
        except DatabaseAway:
            # Not a failure of the row: it stays, and is tried once the database is back
            # (the transcript tells that try whether the model was asked already).
            await self._again(row, self._clock() + self._probe_every_s, failed=False)
            return False
        except Exception as error:
            # Slack refusing or failing past its window, a bug: the row stays, and is
            # given up after MAX_FAILURES (the transcript tells the next try whether the
            # model was asked already).
            await self._failed(row, turn, " ".join(str(error).split()) or type(error).__name__)
            return False
        await self._store.run(lambda store: store.done(row.id))
        log.info("a queued message in %s was answered after %.0f s", turn.place.channel,
                 self._clock() - turn.received_at)
        return True

    async def _recorded(self, turn: Turn) -> Answered | None:
        """The turn's answer if a process recorded it already (and died before posting)."""
        session = await self._sessions.run(
            lambda sessions: sessions.find_open(turn.session_key))
        if session is None:
            return None
        session_id = session.id
        turns = await self._transcript.run(lambda transcript: transcript.turns(session_id))
        # This very turn (its words at its moment: the pipeline records it so), not an
        # earlier one that said the same.
        if (not turns or turns[-1].user_text != redact(turn.text)
                or turns[-1].created_at != turn.received_at):
            return None
        return Answered(turn, turns[-1].reply_text, session_id, None)

    async def _run(self, row: Waiting, turn: Turn) -> Answered | None:
        replay = Replay(row.id)
        token = REPLAYING.set(replay)
        try:
            sink = CollectedReply()
            outcome = await self._pipeline.handle(turn, sink)
        finally:
            REPLAYING.reset(token)
        if replay.deferred:
            return None
        # The reply with what was shown under it (a cut reply's note is in ``reply``).
        text = with_sources(outcome.reply, sink.sources) if outcome.ok else outcome.reply
        return Answered(turn, text, outcome.session_id, outcome.episode_id)

    async def _failed(self, row: Waiting, turn: Turn, why: str) -> None:
        failures = row.tries + 1
        if failures >= MAX_FAILURES:
            log.error("a queued message in %s is given up after %d failures (%s)",
                      turn.place.channel, failures, why)
            await self._store.run(lambda store: store.done(row.id))
            return
        wait_s = min(LONGEST_WAIT_S, self._probe_every_s * 2 ** failures)
        log.warning("a queued message in %s could not be answered yet (%s); again in %.0f s",
                    turn.place.channel, why, wait_s)
        await self._again(row, self._clock() + wait_s, failed=True)

    async def _again(self, row: Waiting, when: float, *, failed: bool) -> None:
        try:
            await self._store.run(lambda store: store.again_at(row.id, when, failed=failed))
        except Exception:
            # Held until its hold runs out, then taken again: nothing lost.
            log.warning("a queued message's next try could not be set; it is tried again"
                        " in %.0f s", HOLD_S)
