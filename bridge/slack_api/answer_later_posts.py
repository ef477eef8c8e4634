"""Posting a queued turn's answer in its Slack thread (``answer_later_job.py``'s
``Post``), outside any delivery, as a routine's post is (``routine_posts.py``): the reply
escaped and cut to Slack's length, in the workspace the turn came from.

Decided: each message posted is handed to ``on_posted`` (the Slack surface records it as
its turn's reply, so a reaction on it finds the episode); without one (this layer cannot
reach the surface's stores) a reaction on a late answer finds no episode.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from slack_sdk.web.async_client import AsyncWebClient

from bridge.pipeline.answer_later_job import Answered, AnswerLaterJob, Ready
from bridge.pipeline.answer_later_store import AnswerLaterStore
from bridge.slack_api.escaping import escaped_pieces
from bridge.slack_api.sure_posts import ThreadMarks, reply_mark, send_once, window_of
from bridge.slack_api.workspace_client import WorkspaceOf, serving_team
from layers.shared.offloaded import Offloaded
from layers.shared.storage.database import Database
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore

if TYPE_CHECKING:
    from bridge.pipeline.pipeline import TurnPipeline

# A message of a late answer, posted: its ts, and the answer it is part of.
OnPosted = Callable[[str, Answered], Awaitable[None]]


class SlackThreadPost:
    """Posts an answer in its turn's thread."""

    def __init__(self, client: AsyncWebClient, *, workspace_of: WorkspaceOf | None = None,
                 on_posted: OnPosted | None = None) -> None:
        self._client = client
        self._workspace_of = workspace_of
        self._on_posted = on_posted

    async def __call__(self, answered: Answered) -> None:
        place = answered.turn.place
        async with serving_team(self._workspace_of, place.team) as installed:
            if not installed:
                return  # uninstalled since: no one can be answered there
            # Each message marked (as a streamed reply's are: ``sure_posts.py``), so a post
            # whose answer was lost, or a row posted again after a crash, is found in the
            # thread rather than posted twice.
            key = f"later:{answered.turn.event_id or answered.session_id}"
            marks = ThreadMarks(self._client, place.channel, place.thread_ts or "")
            pieces = escaped_pieces(answered.text) or ["…"]
            for part, piece in enumerate(pieces, start=1):
                ts = await self._post_once(marks, key, part, piece, place.channel,
                                           place.thread_ts)
                if self._on_posted is not None:
                    await self._on_posted(ts, answered)

    async def _post_once(self, marks: ThreadMarks, key: str, part: int, piece: str,
                         channel: str, thread_ts: str | None) -> str:
        async def send() -> str:
            response = await self._client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, markdown_text=piece,
                metadata=reply_mark(key, part))
            return str(response.get("ts") or "")

        async def landed() -> str | None:
            return await marks.find(key, part, "chat.postMessage")

        found = await landed()
        if found is not None:
            return found
        return await send_once(send, landed, what=f"a late answer in {channel}",
                               window_s=window_of(self._client))


def slack_answer_later_job(
    pipeline: TurnPipeline, db: Database, client: AsyncWebClient, *, owner: str,
    workspace_of: WorkspaceOf | None, ready: Ready, probe_every_s: float,
    on_posted: OnPosted | None = None,
) -> AnswerLaterJob:
    """The job `thoth serve` runs every ANSWER_LATER_EVERY_S."""
    post = SlackThreadPost(client, workspace_of=workspace_of, on_posted=on_posted)
    return AnswerLaterJob(
        Offloaded(AnswerLaterStore(db, owner=owner)), pipeline, Offloaded(SessionStore(db)),
        Offloaded(TranscriptStore(db)), post, ready=ready, probe_every_s=probe_every_s)
