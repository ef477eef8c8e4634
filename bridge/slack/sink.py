"""A reply in a Slack thread: a thinking status, steps and text streamed as they come.

Streaming uses ``chat.startStream`` / ``appendStream`` / ``stopStream``, with the
searches and skill loads shown as ``task_update`` chunks; where Slack refuses to
stream, the reply is posted once and then edited, at most once a second
(``chat.update`` is Tier 3), with the steps shown on the status line.

What Slack says ends the reply: the person pressed Stop (``stopped_by_user``) or the
stream is over (``message_not_in_streaming_state``). Then nothing more is sent,
nothing is posted again, and ``stream`` raises ``ReplyStopped`` so the turn stops.
Any other Slack error never ends the turn: unsent text waits (a pause, not a retry per
chunk), and whatever never showed is posted at the end, without repeating what did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge.pipeline.sink import ReplyStopped, Step
from bridge.slack.escaping import MARKDOWN_CHARS, escape, escaped_pieces, preview
from bridge.slack.feedback import feedback_block

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.8
FLUSH_CHARS = 400
# chat.update is Tier 3 (50+ a minute per workspace): one edit a second per reply at most.
UPDATE_SECONDS = 1.0
# After an error, wait this long before trying again (not once per streamed chunk).
RETRY_PAUSE_SECONDS = 2.0
# Slack drops a status after two minutes without a message; refresh it before that.
STATUS_REFRESH_SECONDS = 100.0
MAX_STATUS_REFRESHES = 12
THINKING_STATUS = "is thinking…"
LOADING_MESSAGES = ["Looking through what we did before…", "Reading the thread…"]
SLACK_ERRORS = (SlackApiError, OSError)
STREAM_ENDED = frozenset({"stopped_by_user", "message_not_in_streaming_state"})
# The plain text beside a reply's blocks: what notifications show.
NOTIFICATION_CHARS = 150


class SlackSink:
    def __init__(
        self,
        client: WebClient,
        *,
        channel: str,
        thread_ts: str,
        recipient_user: str | None,
        recipient_team: str | None,
        on_posted: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        status_refresh_s: float = STATUS_REFRESH_SECONDS,
    ) -> None:
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts
        self._user = recipient_user
        self._team = recipient_team
        self._on_posted = on_posted
        self._clock = clock
        self._status_refresh_s = status_refresh_s
        self._text = ""
        self._pending = ""
        self._chunks: list[dict[str, Any]] = []
        self._last_flush = 0.0
        self._quiet_until = 0.0
        self._stream_ts: str | None = None
        self._message_ts: str | None = None  # the fallback: a posted message we edit
        self._streaming_refused = False
        self._status_text = THINKING_STATUS
        self._keepalive: asyncio.Task[None] | None = None
        self.stopped = False
        self.posted: list[str] = []

    async def thinking(self) -> None:
        await self._status(THINKING_STATUS, LOADING_MESSAGES)
        self._keepalive = asyncio.create_task(self._keep_status_alive())

    async def progress(self, step: Step) -> None:
        if self.stopped:
            return
        if self._streaming_refused:
            if step.status == "in_progress":
                await self._status(THINKING_STATUS, [f"{step.title}…"])
            return
        self._chunks.append(
            {"type": "task_update", "id": step.id, "title": step.title, "status": step.status}
        )
        await asyncio.to_thread(self._flush)
        self._raise_if_stopped()

    async def stream(self, text: str) -> None:
        self._raise_if_stopped()
        self._text += text
        self._pending += text
        now = self._clock()
        if now < self._quiet_until:
            return
        started = self._stream_ts is not None or self._message_ts is not None
        interval = UPDATE_SECONDS if self._message_ts is not None else FLUSH_SECONDS
        due = now - self._last_flush >= interval
        large = self._message_ts is None and len(self._pending) >= FLUSH_CHARS
        if not started or due or large:
            await asyncio.to_thread(self._flush)
        self._raise_if_stopped()

    async def finish(self, text: str, *, ok: bool) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive
        if self.stopped:
            return
        await asyncio.to_thread(self._finish, text, ok)
        if self._stream_ts is None:
            # A finished stream clears the status itself; a posted message needs it cleared.
            await self._status("", None)

    # -- sending (in a worker thread) ----------------------------------------------------

    def _flush(self) -> None:
        self._last_flush = self._clock()
        try:
            if self._stream_ts is None and self._message_ts is None:
                self._start()
            elif self._stream_ts is not None:
                self._append()
            elif self._message_ts is not None:
                self._edit_escaped(self._shown_so_far(), final=False)
                self._pending = ""
        except SlackApiError as error:
            self._slack_refused(error)
        except OSError as error:
            self._pause(type(error).__name__)

    def _start(self) -> None:
        if not self._streaming_refused:
            try:
                response = self._client.chat_startStream(
                    channel=self._channel,
                    thread_ts=self._thread_ts,
                    recipient_user_id=self._user,
                    recipient_team_id=self._team,
                    **self._stream_content(),
                )
            except SlackApiError as error:
                if _code(error) in STREAM_ENDED or _code(error) == "ratelimited":
                    raise
                self._streaming_refused = True
                self._chunks.clear()
                log.info("streaming refused (%s); posting and editing", _code(error))
            else:
                self._stream_ts = str(response["ts"])
                self._sent()
                self._posted(self._stream_ts)
                return
        if not self._pending.strip():
            return  # nothing to show yet: the status line says the agent is working
        response = self._client.chat_postMessage(
            channel=self._channel,
            thread_ts=self._thread_ts,
            **_escaped_blocks(self._shown_so_far(), feedback=False),
        )
        self._message_ts = str(response["ts"])
        self._pending = ""
        self._posted(self._message_ts)

    def _append(self) -> None:
        content = self._stream_content()
        if content:
            assert self._stream_ts is not None
            self._client.chat_appendStream(channel=self._channel, ts=self._stream_ts, **content)
            self._sent()

    def _stream_content(self) -> dict[str, Any]:
        """What is unsent, as a stream call's arguments (chunks once steps are in it).

        At most 12 000 escaped characters a call, cut between characters so that no
        entity is split; ``_sent`` keeps the rest for the next call.
        """
        markdown = escape(self._pending[: self._fitting()]) if self._pending else None
        if not self._chunks:
            return {"markdown_text": markdown} if markdown else {}
        chunks = list(self._chunks)
        if markdown:
            chunks.append({"type": "markdown_text", "text": markdown})
        return {"chunks": chunks}

    def _sent(self) -> None:
        self._pending = self._pending[self._fitting() :]
        self._chunks.clear()

    def _fitting(self) -> int:
        """How many pending characters fit one call once escaped."""
        total = 0
        for index, char in enumerate(self._pending):
            total += len(escape(char))
            if total > MARKDOWN_CHARS:
                return index
        return len(self._pending)

    def _finish(self, text: str, ok: bool) -> None:
        try:
            if self._stream_ts is not None:
                self._stop_stream(ok)
                if not ok:
                    self._post(text, feedback=False)  # the failure, below what streamed
            elif self._message_ts is not None:
                self._finish_edited(text, ok)
            else:
                self._post(text, feedback=ok)
        except SlackApiError as error:
            self._slack_refused(error)

    def _stop_stream(self, ok: bool) -> None:
        assert self._stream_ts is not None
        try:
            while self._fitting() < len(self._pending):
                self._append()  # more than one call holds: the rest goes with the stop
            content = self._stream_content()
            self._client.chat_stopStream(
                channel=self._channel,
                ts=self._stream_ts,
                blocks=[feedback_block()] if ok else None,
                **content,
            )
            self._sent()
        except SlackApiError as error:
            if _code(error) in STREAM_ENDED:
                raise
            log.warning("closing the stream failed (%s); posting what it lacks", _code(error))
            self._post(self._pending, feedback=ok)
        except OSError as error:
            log.warning("closing the stream failed (%s); posting what it lacks", error)
            self._post(self._pending, feedback=ok)

    def _finish_edited(self, text: str, ok: bool) -> None:
        if not ok:
            self._post(text, feedback=False)  # keep what was shown; say what went wrong below
            return
        first, *rest = escaped_pieces(text) or ["…"]
        try:
            self._edit_escaped(first, final=not rest)
        except SLACK_ERRORS as error:
            log.warning("editing the reply failed (%s); posting it whole", error)
            rest = [first, *rest]
        self._post_escaped(rest, feedback=True)

    def _edit_escaped(self, escaped: str, *, final: bool) -> None:
        assert self._message_ts is not None
        self._client.chat_update(
            channel=self._channel, ts=self._message_ts, **_escaped_blocks(escaped, final)
        )

    def _post(self, text: str, *, feedback: bool) -> None:
        self._post_escaped(escaped_pieces(text), feedback=feedback)

    def _post_escaped(self, pieces: list[str], *, feedback: bool) -> None:
        for number, piece in enumerate(pieces, start=1):
            final = feedback and number == len(pieces)
            try:
                response = self._client.chat_postMessage(
                    channel=self._channel, thread_ts=self._thread_ts,
                    **_escaped_blocks(piece, final),
                )
            except SLACK_ERRORS as error:
                log.error("posting a reply to Slack failed: %s", error)
                return
            self._posted(str(response["ts"]))

    def _slack_refused(self, error: SlackApiError) -> None:
        code = _code(error)
        if code in STREAM_ENDED:
            # The person pressed Stop, or Slack ended the stream: the reply ends here.
            log.info("Slack ended the reply (%s) in %s", code, self._channel)
            self.stopped = True
            self._pending = ""
            self._chunks.clear()
            return
        self._pause(code)

    def _pause(self, why: str) -> None:
        log.warning("sending to Slack failed (%s); trying again shortly", why)
        self._quiet_until = self._clock() + RETRY_PAUSE_SECONDS

    def _posted(self, ts: str) -> None:
        self.posted.append(ts)
        if self._on_posted is not None:
            self._on_posted(ts)

    def _shown_so_far(self) -> str:
        pieces = escaped_pieces(self._text)
        return pieces[0] if pieces else "…"

    def _raise_if_stopped(self) -> None:
        if self.stopped:
            raise ReplyStopped()

    # -- the status line ---------------------------------------------------------------

    async def _keep_status_alive(self) -> None:
        # Bounded: a turn cancelled before ``finish`` must not keep a status forever.
        for _ in range(MAX_STATUS_REFRESHES):
            await asyncio.sleep(self._status_refresh_s)
            if self.stopped:
                return
            await self._status(self._status_text, LOADING_MESSAGES)

    async def _status(self, status: str, loading: list[str] | None) -> None:
        if status:
            self._status_text = status
        try:
            await asyncio.to_thread(
                self._client.assistant_threads_setStatus,
                channel_id=self._channel,
                thread_ts=self._thread_ts,
                status=status,
                loading_messages=loading,
            )
        except SLACK_ERRORS as error:
            # Only assistant threads have a status line; elsewhere the reply itself is news.
            log.debug("status not shown: %s", error)


def _escaped_blocks(escaped_text: str, feedback: bool) -> dict[str, Any]:
    """A reply as a ``markdown`` block (Slack's own Markdown), with a notification text.

    ``markdown_text`` cannot carry blocks, and the feedback buttons are a block.
    """
    blocks: list[dict[str, Any]] = [{"type": "markdown", "text": escaped_text or "…"}]
    if feedback:
        blocks.append(feedback_block())
    return {"text": preview(escaped_text, NOTIFICATION_CHARS), "blocks": blocks}


def _code(error: SlackApiError) -> str:
    return str(error.response.get("error"))
