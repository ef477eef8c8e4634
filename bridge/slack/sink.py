"""A reply in a Slack thread: a thinking status, then the text streamed as it comes.

Streaming uses ``chat.startStream`` / ``appendStream`` / ``stopStream``; where
Slack refuses it (outside assistant threads, older workspaces) the reply falls
back to posting a message and updating it. Text goes out in batches (at most
every ``FLUSH_SECONDS`` or ``FLUSH_CHARS``) to stay well under Slack's rate limits.
A Slack error never ends the turn: unsent text waits for the next flush, and
whatever could not be streamed is posted whole at the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge.slack.mrkdwn import split_message, to_mrkdwn

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.8
FLUSH_CHARS = 400
THINKING_STATUS = "is thinking…"
LOADING_MESSAGES = ["Looking through what we did before…", "Reading the thread…"]
SLACK_ERRORS = (SlackApiError, OSError)


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
    ) -> None:
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts
        self._user = recipient_user
        self._team = recipient_team
        self._on_posted = on_posted
        self._text = ""
        self._pending = ""
        self._last_flush = 0.0
        self._stream_ts: str | None = None
        self._message_ts: str | None = None  # the fallback: a posted message we update
        self._streaming_refused = False
        self.posted: list[str] = []

    async def thinking(self) -> None:
        await self._status(THINKING_STATUS, LOADING_MESSAGES)

    async def stream(self, text: str) -> None:
        self._text += text
        self._pending += text
        started = self._stream_ts is not None or self._message_ts is not None
        due = time.monotonic() - self._last_flush >= FLUSH_SECONDS
        if not started or due or len(self._pending) >= FLUSH_CHARS:
            await asyncio.to_thread(self._flush)

    async def finish(self, text: str, *, ok: bool) -> None:
        await asyncio.to_thread(self._finish, text, ok)
        if self._stream_ts is None:
            # A finished stream clears the status itself; a posted message needs it cleared.
            await self._status("", None)

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        try:
            if self._stream_ts is None and self._message_ts is None:
                self._start()
            elif self._stream_ts is not None and self._pending:
                self._client.chat_appendStream(
                    channel=self._channel, ts=self._stream_ts, markdown_text=self._pending
                )
            elif self._message_ts is not None:
                self._client.chat_update(
                    channel=self._channel, ts=self._message_ts, text=self._first_piece()
                )
        except SLACK_ERRORS as error:
            # Keep the text: the next flush (or the end of the turn) sends it.
            log.warning("streaming to Slack failed (%s); will retry", _why(error))
            return
        self._pending = ""

    def _start(self) -> None:
        if not self._streaming_refused:
            try:
                response = self._client.chat_startStream(
                    channel=self._channel,
                    thread_ts=self._thread_ts,
                    markdown_text=self._pending,
                    recipient_user_id=self._user,
                    recipient_team_id=self._team,
                )
                self._stream_ts = str(response["ts"])
                self._posted(self._stream_ts)
                return
            except SlackApiError as error:
                self._streaming_refused = True
                log.info("streaming refused (%s); posting and updating", _why(error))
        response = self._client.chat_postMessage(
            channel=self._channel, thread_ts=self._thread_ts, text=self._first_piece()
        )
        self._message_ts = str(response["ts"])
        self._posted(self._message_ts)

    def _finish(self, text: str, ok: bool) -> None:
        if self._stream_ts is not None:
            try:
                self._client.chat_stopStream(
                    channel=self._channel, ts=self._stream_ts, markdown_text=self._pending or None
                )
                self._pending = ""
            except SLACK_ERRORS as error:
                log.warning("closing the stream failed (%s); posting the reply whole", _why(error))
                self._post(split_message(to_mrkdwn(self._text)))
            if not ok:
                self._post(split_message(to_mrkdwn(text)))  # the failure, below what streamed
            return
        pieces = split_message(to_mrkdwn(text)) or ["…"]
        if self._message_ts is not None:
            if not ok:
                self._post(pieces)  # keep what was shown; say what went wrong below it
                return
            try:
                self._client.chat_update(channel=self._channel, ts=self._message_ts, text=pieces[0])
                pieces = pieces[1:]
            except SLACK_ERRORS as error:
                log.warning("updating the reply failed (%s); posting it whole", _why(error))
        self._post(pieces)

    def _post(self, pieces: list[str]) -> None:
        for piece in pieces:
            try:
                response = self._client.chat_postMessage(
                    channel=self._channel, thread_ts=self._thread_ts, text=piece
                )
            except SLACK_ERRORS as error:
                log.error("posting a reply to Slack failed: %s", _why(error))
                return
            self._posted(str(response["ts"]))

    def _posted(self, ts: str) -> None:
        self.posted.append(ts)
        if self._on_posted is not None:
            self._on_posted(ts)

    def _first_piece(self) -> str:
        pieces = split_message(to_mrkdwn(self._text))
        return pieces[0] if pieces else "…"

    async def _status(self, status: str, loading: list[str] | None) -> None:
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
            log.debug("status not shown: %s", _why(error))


def _why(error: Exception) -> str:
    if isinstance(error, SlackApiError):
        return str(error.response.get("error"))
    return type(error).__name__
