"""A reply in a Slack thread: a thinking status, then the text streamed as it comes.

Streaming uses ``chat.startStream`` / ``appendStream`` / ``stopStream``; where
Slack refuses it (outside assistant threads, older workspaces) the reply falls
back to posting a message and updating it. Text goes out in batches (at most
every ``FLUSH_SECONDS`` or ``FLUSH_CHARS``) to stay well under Slack's rate limits.
"""

from __future__ import annotations

import asyncio
import logging
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bridge.slack.mrkdwn import split_message, to_mrkdwn

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.8
FLUSH_CHARS = 400
THINKING_STATUS = "is thinking…"
LOADING_MESSAGES = ["Looking through what we did before…", "Reading the thread…"]


class SlackSink:
    def __init__(
        self,
        client: WebClient,
        *,
        channel: str,
        thread_ts: str,
        recipient_user: str | None,
        recipient_team: str | None,
    ) -> None:
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts
        self._user = recipient_user
        self._team = recipient_team
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
        due = time.monotonic() - self._last_flush >= FLUSH_SECONDS
        if self._stream_ts is None and self._message_ts is None or due or (
            len(self._pending) >= FLUSH_CHARS
        ):
            await asyncio.to_thread(self._flush)

    async def finish(self, text: str, *, ok: bool) -> None:
        await asyncio.to_thread(self._finish, text)
        if self._stream_ts is None:
            # A finished stream clears the status itself; a posted message needs it cleared.
            await self._status("", None)

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self._stream_ts is None and self._message_ts is None:
            self._start()
        elif self._stream_ts is not None and self._pending:
            self._client.chat_appendStream(
                channel=self._channel, ts=self._stream_ts, markdown_text=self._pending
            )
        elif self._message_ts is not None:
            self._client.chat_update(
                channel=self._channel, ts=self._message_ts, text=to_mrkdwn(self._text)
            )
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
                self.posted.append(self._stream_ts)
                return
            except SlackApiError as error:
                self._streaming_refused = True
                log.info("streaming refused (%s); posting and updating", error.response["error"])
        first = split_message(to_mrkdwn(self._text))[0] if self._text.strip() else "…"
        response = self._client.chat_postMessage(
            channel=self._channel, thread_ts=self._thread_ts, text=first
        )
        self._message_ts = str(response["ts"])
        self.posted.append(self._message_ts)

    def _finish(self, text: str) -> None:
        if self._stream_ts is not None:
            self._client.chat_stopStream(
                channel=self._channel, ts=self._stream_ts, markdown_text=self._pending or None
            )
            self._pending = ""
            if text.strip() != self._text.strip():
                # The turn failed after text had streamed: say so below it.
                self._post(split_message(to_mrkdwn(text)))
            return
        pieces = split_message(to_mrkdwn(text)) or ["…"]
        if self._message_ts is not None:
            self._client.chat_update(channel=self._channel, ts=self._message_ts, text=pieces[0])
            pieces = pieces[1:]
        self._post(pieces)

    def _post(self, pieces: list[str]) -> None:
        for piece in pieces:
            response = self._client.chat_postMessage(
                channel=self._channel, thread_ts=self._thread_ts, text=piece
            )
            self.posted.append(str(response["ts"]))

    async def _status(self, status: str, loading: list[str] | None) -> None:
        try:
            await asyncio.to_thread(
                self._client.assistant_threads_setStatus,
                channel_id=self._channel,
                thread_ts=self._thread_ts,
                status=status,
                loading_messages=loading,
            )
        except SlackApiError as error:
            # Only assistant threads have a status line; elsewhere the reply itself is news.
            log.debug("status not shown: %s", error.response.get("error"))
