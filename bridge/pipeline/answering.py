"""The model's answer to one turn: stream it, run the tools it calls, and decide what the
person reads when it falls short (cut, refused, out of tool rounds, out of budget).

Nothing here knows a model's wire format: the request and its tool rounds are neutral
(``bridge/model/protocol.py``), and the model's adapter turns them into its API's calls.

A turn the model's API paused (``pause_turn``: a web search or fetch ran long) is
continued, not ended: the next request carries the model's turn so far as it came and no
new message, up to ``MAX_CONTINUATIONS`` times (each a call metered and charged like any
other), and only past that is it shown as paused. The web pages the answer rests on
(``ModelResult.sources``) are gathered over every call, each once, at most
``MAX_SOURCES``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from bridge import messages
from bridge.model.pricing import Usage
from bridge.model.protocol import (
    LanguageModel,
    ModelAsksToWait,
    ModelRefusedRequest,
    ModelRequest,
    ModelUnavailable,
    PromptTooLong,
    Source,
    SpendLimitReached,
)
from bridge.pipeline.reply_sink import ReplySink, ReplyStopped
from bridge.pipeline.tool_round import run_tool_round
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.turn import Turn
from layers.shared.errors import CostCapReached, DatabaseAway, PersonCapReached, StorageFull
from layers.shared.redaction.stream import RedactingStream

log = logging.getLogger(__name__)

# A model that keeps asking for tools is cut off and its text so far is the reply.
MAX_TOOL_ROUNDS = 4
# A turn the API pauses is continued this many times at most, then shown as paused: a
# bound on one question's spend whatever the pages make the model do.
MAX_CONTINUATIONS = 5
PAUSED = "pause_turn"
# The most sources shown under a reply: the first cited ones.
MAX_SOURCES = 5
# Stop reasons that end a reply short of an answer (the Messages API reference).
STOP_NOTICES = {
    "max_tokens": messages.REPLY_CUT,
    # Only past MAX_CONTINUATIONS: before that, a paused turn is continued.
    PAUSED: messages.REPLY_PAUSED,
    "model_context_window_exceeded": messages.CONTEXT_FULL,
    "refusal": messages.MODEL_REFUSED,
}


@dataclass
class Answer:
    """What the turn answered: the reply, or what the person reads instead, and its cost."""

    text: str = ""
    ok: bool = True
    stopped: bool = False
    # What to show at the end when the reply already streamed and then fell short (cut at
    # the length limit, refused): the transcript keeps the text and this note together.
    notice: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    model: str = ""
    # Seconds spent waiting on the model, every round together.
    model_seconds: float = 0.0
    # A tool that changes what Thoth keeps was called (a forget may have taken the
    # turn's own session: ``TurnPipeline.handle`` looks before it records the turn).
    changed_memory: bool = False
    # The web pages the reply rests on, each once, in the order they came.
    sources: list[Source] = field(default_factory=list)
    # The model's API was overloaded (or asked to wait) before anything was shown and
    # before any tool ran: the turn may be answered later, from the start
    # (``answer_later.py``), without repeating anything it did.
    deferrable: bool = False
    # Queued to be answered later: neither recorded nor remembered now.
    put_off: bool = False

    def failed(self, message: str) -> None:
        self.text = message
        self.ok = False

    def queued(self, message: str) -> None:
        """Put off: ``message`` is shown, nothing of the turn is kept until its answer."""
        self.failed(message)
        self.put_off = True

    def add_sources(self, sources: tuple[Source, ...]) -> None:
        known = {source.url for source in self.sources}
        for source in sources:
            if source.url not in known and len(self.sources) < MAX_SOURCES:
                known.add(source.url)
                self.sources.append(source)


async def answer_turn(
    answer: Answer, model: LanguageModel, request: ModelRequest, turn: Turn, sink: ReplySink,
    tools: ToolBox, session_id: str,
) -> None:
    """Fill ``answer``: the streamed reply, or a failure message, and what it cost. Never
    raises for a model or tool failure; a cancelled turn leaves ``answer`` as far as it got.
    """
    reply = ReplyStream(sink)
    round_number = continuations = 0
    try:
        while True:
            reply.next_round()
            started = time.monotonic()
            result = await model.respond(request, reply.write)
            answer.model_seconds += time.monotonic() - started
            answer.usage = answer.usage + result.usage
            answer.cost_usd += result.cost_usd
            answer.add_sources(result.sources)
            if result.stop_reason == PAUSED and continuations < MAX_CONTINUATIONS:
                continuations += 1
                log.info("the model's turn paused; continuing (%d) in session %s",
                         continuations, session_id)
                request = request.continued(result)
                continue
            notice = STOP_NOTICES.get(result.stop_reason or "")
            if notice is None and result.tool_calls and round_number == MAX_TOOL_ROUNDS:
                notice = messages.TOOL_ROUNDS_USED.format(rounds=MAX_TOOL_ROUNDS)
            if notice is not None:
                # Cut, refused, out of room or out of tool rounds: shown as such, never
                # run (a tool call cut mid-input), never stored as an answer or replayed.
                log.warning("model stopped (%s) in session %s", notice, session_id)
                answer.notice = notice
                await reply.flush()
                answer.failed(f"{reply.text}\n\n{notice}".strip())
                return
            if not result.tool_calls:
                break
            answer.changed_memory |= any(tools.changes(call.name)
                                         for call in result.tool_calls)
            request = await run_tool_round(request, result, turn, sink, tools)
            round_number += 1
        await reply.flush()
    except DatabaseAway as away:
        if turn.event_id is not None and round_number == 0 and not reply.text:
            # A Slack delivery, before any word or tool: nothing is lost by stopping
            # here, as the delivery runs the turn again once the database is back
            # (bridge/slack/delivery_order.py). After a tool, running it again would run
            # the tool twice; elsewhere nothing runs it again: told, as any failure.
            raise
        _failed(answer, away, reply, first_round=round_number == 0, session_id=session_id)
        return
    except Exception as error:
        _failed(answer, error, reply, first_round=round_number == 0, session_id=session_id)
        return
    if not reply.text:
        # Only tool calls and no words (or an empty answer): not a reply to store or
        # replay, since a conversation with an empty reply in it is refused next turn.
        log.error("the model gave no text for session %s", session_id)
        answer.failed(messages.EMPTY_REPLY)
        return
    answer.text = reply.text


def _failed(answer: Answer, error: Exception, reply: ReplyStream, *, first_round: bool,
            session_id: str) -> None:
    """What the person is told of a turn that stopped on ``error``."""
    if isinstance(error, CostCapReached):
        told = (messages.PERSON_CAP_REACHED if isinstance(error, PersonCapReached)
                else messages.COST_CAP_REACHED)
        answer.failed(told.format(cap=error.cap_usd))
    elif isinstance(error, ReplyStopped):
        log.info("the reply was stopped by its reader in session %s", session_id)
        answer.stopped = True
        answer.failed(f"{reply.text}\n\n{messages.STOPPED}".strip())
    elif isinstance(error, ModelUnavailable):
        # Before any tool ran: a tool (a team's, say) may have changed something that a
        # turn run again from the start would change twice.
        answer.deferrable = may_wait(error) and not reply.text and first_round
        # A turn that may wait is logged once, where it is queued or told (the pipeline).
        answer.failed(told_for(error, session_id, logged=not answer.deferrable))
    elif isinstance(error, StorageFull):
        # The model's spend could not be reserved: nothing was asked of it, and the turn
        # is told it cannot be kept (``storage_full.py``).
        answer.failed(messages.DISK_FULL)
    else:
        log.exception("turn failed for session %s", session_id, exc_info=error)
        answer.failed(messages.INTERNAL_ERROR)


def may_wait(error: ModelUnavailable) -> bool:
    """Whether the turn could be answered once the model is back: its API was overloaded,
    unreachable or asked to wait (``RetryingModel`` gave up on it), not refused."""
    return isinstance(error, ModelAsksToWait) or (
        error.retryable and not isinstance(error, SpendLimitReached))


def told_for(error: ModelUnavailable, session_id: str, *, logged: bool = True) -> str:
    """What the person reads when the model failed, and the line the operator gets
    (unless not ``logged``: a turn that may wait is logged where it is queued)."""
    if isinstance(error, SpendLimitReached):
        log.error("model spend limit for session %s: %s", session_id, error)
        return messages.MODEL_SPEND_LIMIT
    if isinstance(error, PromptTooLong):
        log.warning("the prompt no longer fits the model in session %s: %s", session_id, error)
        return messages.CONTEXT_FULL
    if isinstance(error, ModelRefusedRequest):
        # Never goes away by itself: the operator has something to fix (doctor says it).
        log.error("model refused the request for session %s: %s", session_id, error)
        return messages.MODEL_MISCONFIGURED
    if isinstance(error, ModelAsksToWait):
        if logged:
            log.warning("model asks to wait %.0fs in session %s", error.seconds, session_id)
        return messages.MODEL_ASKS_TO_WAIT.format(seconds=round(error.seconds))
    if logged:
        log.error("model failed for session %s: %s", session_id, error)
    return messages.MODEL_FAILED


class ReplyStream:
    """Forwards streamed text to the sink, redacted, and keeps the whole reply.

    The model may repeat a secret the person pasted; it is redacted before anyone
    sees it, whichever transport shows the reply.
    """

    def __init__(self, sink: ReplySink) -> None:
        self._sink = sink
        self._redacting = RedactingStream()
        self._new_round = False
        self._started = False

    def next_round(self) -> None:
        # Text after a tool call starts a new paragraph.
        self._new_round = self._started

    async def write(self, text: str) -> None:
        if not text:
            return
        if self._new_round:
            self._new_round = False
            text = "\n\n" + text
        self._started = True
        shown = self._redacting.feed(text)
        if shown:
            await self._sink.stream(shown)

    async def flush(self) -> None:
        """Show what was held back to be redacted with what followed it."""
        rest = self._redacting.end()
        if rest:
            await self._sink.stream(rest)

    @property
    def text(self) -> str:
        return self._redacting.text.strip()
