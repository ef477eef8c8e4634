"""The episode a turn leaves behind (DESIGN.md "One turn", step 7), or none."""

from __future__ import annotations

import uuid

from bridge.model.question_or_statement import asks
from bridge.pipeline.answering import Answer
from bridge.pipeline.shared_files import kept_files
from bridge.pipeline.turn import Turn
from layers.episodic.episode import Episode
from layers.episodic.summary import summarize_reply


def episode_of(turn: Turn, session_id: str, answer: Answer, *, memory_only: bool) -> Episode | None:
    """``memory_only``: the reply came from no language model (the offline responder)."""
    if not answer.ok:
        return None
    if memory_only and asks(turn.text) and not turn.files:
        # Decided: a question that got no answer (no model) carries nothing to recall,
        # and stored it would outrank the turns that hold the facts it asked about.
        # The transcript keeps it; with a model the reply's summary makes it worth
        # an episode. Files shared with it are kept whatever was asked.
        return None
    return Episode(
        id=uuid.uuid4().hex,
        user_text=turn.text,
        # The offline responder's text is about the missing model, not an answer.
        summary="" if memory_only else summarize_reply(answer.text),
        created_at=turn.received_at,
        team=turn.place.team,
        channel=turn.place.channel,
        channel_type=turn.place.channel_type,
        thread_ts=turn.place.thread_ts,
        user=turn.user,
        user_name=turn.user_name,
        session_id=session_id,
        cost_usd=answer.cost_usd,
        reply_model=answer.model,
        files=kept_files(turn.files),
    )
