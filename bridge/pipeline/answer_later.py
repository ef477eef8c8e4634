"""Turns told "Claude is overloaded; I will answer when it is back", and answered once it
is, once, from a queue every replica shares.

When the model's API gives up on a turn (``RetryingModel``: overloaded, unreachable, or
asking to wait past the call's budget) before any word of the reply was shown and before
any tool ran (``Answer.deferrable``), ``TurnPipeline.handle``
asks ``AnswerLater.defer``: a Slack message is queued (``answer_later_store.py``) and the
person reads ``messages.MODEL_OVERLOADED_LATER``. Nothing of the turn is recorded then:
no transcript turn, no episode, no identity write. The answer is recorded when it is
given, so the transcript holds the person's words once and the answer once, and
``Conversation.take_over``'s rule (a turn is answered when it is the transcript's latest)
keeps holding.

``AnswerLaterJob`` (``answer_later_job.py``; every `thoth serve` runs it every
ANSWER_LATER_EVERY_S) claims the due rows, each the oldest of its conversation, runs each
through the pipeline again and has its reply posted in the thread; while the model is
still overloaded the circuit lets one row through as its probe and the job stops there.

Decided:
- Only a Slack message (it has a delivery id and a thread to answer in) is queued; a
  turn with shared files is not (their contents are not kept while it waits: the person
  is told to try again, as before), nor a turn a person answered on a card.
- A turn in which a tool ran before the overload is not queued: run again from the start
  it would run the tool again (a team's tool may have changed something; only a few of
  Thoth's own tools are known not to). It is told the model failed, as before, and kept
  in the transcript as a failed turn. During an overload few turns get that far: the
  circuit refuses their first call.
- A message that comes into a conversation with a turn waiting is queued behind it (told
  the same line) rather than answered first: the model sees the conversation in order.
- A queued turn is answered with no one to ask: a tool that would ask runs only where its
  person allowed it always (as a routine's), and the model is told it did not run.
- A process that dies answering: its row is taken again once its hold runs out; if the
  turn was recorded already (the transcript's latest is this message), its recorded
  reply is posted instead of asking the model again.
"""

from __future__ import annotations

import contextvars
import logging
import time
from dataclasses import dataclass
from typing import Any

from bridge.pipeline.answer_later_store import AnswerLaterStore
from bridge.pipeline.turn import Turn
from layers.shared.offloaded import Offloaded
from layers.shared.places import LOCAL_TEAM, Place
from layers.shared.redaction import redact

log = logging.getLogger(__name__)


@dataclass
class Replay:
    """The row being answered on this task (set by the job, read by ``AnswerLater``)."""

    entry_id: int
    deferred: bool = False


REPLAYING: contextvars.ContextVar[Replay | None] = contextvars.ContextVar(
    "answer_later_replaying", default=None)


class AnswerLater:
    """What ``TurnPipeline.handle`` asks: whether a turn must wait behind one queued in
    its conversation, and to queue one the model could not answer."""

    def __init__(self, store: Offloaded[AnswerLaterStore]) -> None:
        self._store = store

    async def behind_another(self, turn: Turn) -> bool:
        """Whether an earlier turn of this conversation waits to be answered: this one
        then waits behind it (``defer``)."""
        if not may_queue(turn):
            return False
        replay = REPLAYING.get()
        before = replay.entry_id if replay is not None else None
        return await self._store.run(
            lambda store: store.waiting_before(turn.session_key, before))

    async def defer(self, turn: Turn) -> bool:
        """Queue ``turn`` to be answered once the model is back; False when it cannot be
        (not a Slack message, or files shared with it): the person is told it failed."""
        replay = REPLAYING.get()
        if replay is not None:
            replay.deferred = True  # its row stays queued: nothing to add
            return True
        if not may_queue(turn):
            return False
        assert turn.event_id is not None
        event_key, record = turn.event_id, turn_record(turn)
        added = await self._store.run(
            lambda store: store.add(event_key, turn.session_key, record,
                                    team=turn.place.team, user=turn.user or ""))
        log.warning("the model is overloaded: a message in %s is queued to be answered when"
                    " it is back%s", turn.place.channel, "" if added else " (queued already)")
        return True


def may_queue(turn: Turn) -> bool:
    """A Slack message of words, with a delivery id to queue it by."""
    return (turn.event_id is not None and turn.place.team != LOCAL_TEAM and not turn.files
            and turn.answered_call is None and turn.place.thread_ts is not None)


def turn_record(turn: Turn) -> dict[str, Any]:
    """What the queue keeps of a turn: everything but its files and its way to ask (it
    has neither), its words redacted like everything Thoth stores."""
    place = turn.place
    return {
        "session_key": turn.session_key, "text": redact(turn.text),
        "place": {"team": place.team, "channel": place.channel,
                  "channel_type": place.channel_type, "thread_ts": place.thread_ts,
                  "channel_name": place.channel_name},
        "user": turn.user, "user_name": turn.user_name, "zone": turn.zone,
        "received_at": turn.received_at, "event_id": turn.event_id,
        "looking_at": turn.looking_at, "confined": turn.confined, "org": turn.org,
    }


def turn_of(record: dict[str, Any]) -> Turn:
    """A queued turn as it was, with no one to ask (``approvals`` None)."""
    return Turn(
        str(record["session_key"]), str(record["text"]), Place(**record["place"]),
        user=record.get("user"), user_name=record.get("user_name"), zone=record.get("zone"),
        received_at=float(record.get("received_at") or time.time()),
        event_id=record.get("event_id"), looking_at=record.get("looking_at"),
        confined=bool(record.get("confined")), org=record.get("org"), approvals=None)
