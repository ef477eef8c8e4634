"""A reply in a Slack thread: a thinking status, steps and text streamed as they come.

Streaming uses ``chat.startStream`` / ``appendStream`` / ``stopStream``, with the
searches and skill loads shown as ``task_update`` chunks; where Slack refuses to
stream, the reply is posted once and then edited, at most once a second
(``chat.update`` is Tier 3), with the steps shown on the status line.

What Slack says ends the reply: the person pressed Stop (an append answered
``stopped_by_user``; after it, stopping answers ``message_not_in_streaming_state``).
Then nothing more is sent, nothing is posted again, and ``stream`` / ``finish`` raise
``ReplyStopped`` so the turn stops. An append answered ``message_not_in_streaming_state``
without a Stop means Slack let the stream lapse (a turn of several minutes): the
message stays, and the reply goes on by editing it. Any other Slack error never ends
the turn: unsent text waits (a pause, not a retry per chunk), a refused step or button
block is dropped, and what never showed is posted at the end, without repeating what did.

When Slack fails (a 5xx, a reset, a timeout: ``sure_posts.py``), a call that makes a
message is never sent again blindly. Each message of the reply carries the reply's mark
(message metadata: the reply's key and the part's number), and after a failure that may
have landed the thread is read for it first. A stream start that may have landed is
looked for the same way, by what it carried, and taken up again if it did. An append
that may have landed leaves the stream's text uncertain: nothing more is appended, and at
the end the stream is closed and its message written whole with ``chat.update`` (which
may be sent twice). The final parts keep trying for the delivery window, then the reply
is marked ``undelivered`` for the turn to know.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.model.protocol import Source
from bridge.pipeline.reply_sink import ReplyStopped, Step
from bridge.slack.feedback import feedback_block
from bridge.slack.reply_sources import sources_block
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import MARKDOWN_CHARS, escape, escaped_pieces, preview
from bridge.slack_api.rate_budget import BudgetedAsyncWebClient, RateBudget, budget_key
from bridge.slack_api.sure_posts import (
    ThreadMarks,
    error_code,
    may_have_landed,
    passing,
    reply_mark,
    send_once,
    window_of,
)
from layers.shared.quoting import quoted

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.8
FLUSH_CHARS = 400
# chat.update is Tier 3 (50+ a minute per workspace): one edit a second per reply at most.
UPDATE_SECONDS = 1.0
# A stream's two Tier 2 calls: while either is held or paced after a 429, a reply is
# posted whole instead (``SlackSink._start_waits``).
STREAM_ENDS = ("chat.startStream", "chat.stopStream")
# After an error, wait this long before trying again (not once per streamed chunk).
RETRY_PAUSE_SECONDS = 2.0
# Slack drops a status after two minutes without a message; refresh it before that.
STATUS_REFRESH_SECONDS = 100.0
MAX_STATUS_REFRESHES = 12
LOADING_MESSAGES = ["Looking through what we did before…", "Reading the thread…"]
STOPPED_BY_USER = "stopped_by_user"
RATELIMITED = "ratelimited"
NOT_STREAMING = "message_not_in_streaming_state"
# Refusals of a chunk or a block: sending the same again would fail again.
BAD_PARTS = frozenset(
    {"invalid_chunks", "invalid_blocks", "invalid_blocks_format", "msg_blocks_too_long",
     "msg_blocks_too_many"}
)
# The plain text beside a reply's blocks: what notifications show.
NOTIFICATION_CHARS = 150


@dataclass(frozen=True)
class _UnsureStart:
    """A first message that failed in a way that may have landed (``sure_posts.py``)."""

    part: int
    stream_text: str | None  # a stream's start: the text it carried; None: a post
    pending_chars: int  # how much of the pending text it carried
    chunks: int  # how many of the steps it carried


class SlackSink:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread_ts: str,
        recipient_user: str | None,
        recipient_team: str | None,
        on_posted: Callable[[str], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        status_refresh_s: float = STATUS_REFRESH_SECONDS,
        delivery_window_s: float | None = None,
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
        self._status_text = messages.THINKING_STATUS
        self._keepalive: asyncio.Task[None] | None = None
        self._finished = False
        # The links to the web pages the reply rests on, under its last message.
        self._sources: dict[str, Any] | None = None
        self.stopped = False
        self.posted: list[str] = []
        # The reply's mark: its key (one per reply) and each message's part number.
        self._key = uuid.uuid4().hex
        self._parts = 0
        self._stream_part = 0
        self._marks = ThreadMarks(client, channel, thread_ts)
        self._window = window_of(client) if delivery_window_s is None else delivery_window_s
        self._start_unsure: _UnsureStart | None = None
        self._append_unsure = False  # an append may have landed: the text is rewritten
        # A part of the reply Slack never took, after the whole delivery window: the turn
        # reads it (the person was not answered).
        self.undelivered = False

    async def thinking(self) -> None:
        await self._status(messages.THINKING_STATUS, LOADING_MESSAGES)
        self._keepalive = asyncio.create_task(self._keep_status_alive())

    async def progress(self, step: Step) -> None:
        if self.stopped:
            return
        if self._streaming_refused:
            if step.status == "in_progress":
                await self._status(messages.THINKING_STATUS, [f"{step.title}…"])
            return
        self._chunks.append(
            {"type": "task_update", "id": step.id, "title": step.title, "status": step.status}
        )
        if (self._stream_ts is None and not self._start_waits()) or not self._held():
            await self._flush()
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
        # The first message goes unless its method would keep it waiting (then the words
        # gather, under the status line, for the next try or the final post); later
        # updates gather while their method is held rather than queue behind the wait.
        if (not started and not self._start_waits()) or (
                started and (due or large) and not self._held()):
            await self._flush()
        self._raise_if_stopped()

    async def finish(self, text: str, *, ok: bool, sources: Sequence[Source] = ()) -> None:
        self._finished = True
        self._sources = sources_block(sources) if ok else None
        if self._keepalive is not None:
            self._keepalive.cancel()
            await asyncio.wait([self._keepalive])
        if self.stopped:
            return
        await self._finish(text, ok)
        if self._stream_ts is None:
            # A finished stream clears the status itself; a posted message needs it cleared.
            await self._status("", None, final=True)
        self._raise_if_stopped()  # Stop pressed while the reply was being closed

    # -- sending ---------------------------------------------------------------------------

    def _held(self) -> bool:
        """Whether the next update's method is waiting out a 429 of Slack's (given to
        any conversation of the workspace), or its pace after one: then the update is not
        queued behind the wait, its text gathers for the next one (``rate_budget.py``)."""
        method = ("chat.appendStream" if self._stream_ts is not None else
                  "chat.update" if self._message_ts is not None else "chat.startStream")
        return self._delay(method) > 0

    def _start_waits(self) -> bool:
        """Whether a stream should not be started now: its start or its stop is waiting out
        a 429 of Slack's, or paced after one (a stream costs those two Tier 2 calls, where
        a whole reply costs one chat.postMessage at three times their pace). In a burst the
        reply is then posted whole at the end, and the turn does not hold its slot waiting
        for a stream to open or close."""
        budget = self._budget()
        return not self._streaming_refused and budget is not None and any(
            budget.paced(budget_key(method, None)) for method in STREAM_ENDS)

    def _delay(self, method: str) -> float:
        """How long a call of ``method`` made now would wait for the workspace's budget."""
        budget = self._budget()
        return 0.0 if budget is None else budget.delay_for(budget_key(method, None))

    def _budget(self) -> RateBudget | None:
        """The workspace's rate budget (None for a client that keeps none)."""
        return self._client.budget if isinstance(self._client, BudgetedAsyncWebClient) else None

    async def _flush(self) -> None:
        if self._start_unsure is not None and self._clock() < self._quiet_until:
            return  # a step's flush does not read the thread again within the pause
        self._last_flush = self._clock()
        try:
            if self._start_unsure is not None and not await self._settle_start():
                return
            if self._stream_ts is None and self._message_ts is None:
                await self._start()
            elif self._stream_ts is not None:
                if not self._append_unsure:
                    await self._append()
            elif self._message_ts is not None:
                await self._edit_escaped(self._shown_so_far(), final=False)
                self._pending = ""
        except SlackApiError as error:
            self._slack_refused(error)
        except SLACK_FAILURES as error:
            self._pause(type(error).__name__)

    async def _start(self) -> None:
        if not self._streaming_refused:
            content = self._stream_content()
            carried = (self._fitting(), len(self._chunks))
            part = self._next_part()
            try:
                response = await self._client.chat_startStream(
                    channel=self._channel,
                    thread_ts=self._thread_ts,
                    recipient_user_id=self._user,
                    recipient_team_id=self._team,
                    **content,
                )
            except SlackApiError as error:
                if _code(error) == RATELIMITED or passing(error):
                    self._unsure_start(error, part, _start_text(content), carried)
                    raise
                self._streaming_refused = True
                self._chunks.clear()
                log.info("streaming refused (%s); posting and editing", _code(error))
            except SLACK_FAILURES as error:
                self._unsure_start(error, part, _start_text(content), carried)
                raise
            else:
                self._stream_ts = str(response["ts"])
                self._stream_part = part
                self._sent()
                await self._posted(self._stream_ts)
                return
        if not self._pending.strip():
            return  # nothing to show yet: the status line says the agent is working
        part = self._next_part()
        try:
            response = await self._client.chat_postMessage(
                channel=self._channel,
                thread_ts=self._thread_ts,
                metadata=reply_mark(self._key, part),
                **_escaped_blocks(self._shown_so_far(), None),
            )
        except SLACK_FAILURES as error:
            self._unsure_start(error, part, None, (0, 0))
            raise
        self._message_ts = str(response["ts"])
        self._pending = ""
        await self._posted(self._message_ts)

    def _next_part(self) -> int:
        self._parts += 1
        return self._parts

    def _unsure_start(self, error: BaseException, part: int, stream_text: str | None,
                      carried: tuple[int, int]) -> None:
        """Note a first message whose failure may have landed (``carried``: how many
        pending characters and steps it carried): before another is sent, the thread is
        read for it (``_settle_start``)."""
        if may_have_landed(error):
            self._start_unsure = _UnsureStart(part, stream_text, *carried)

    async def _settle_start(self) -> bool:
        """Whether the reply may go on, once the thread said whether a first message that
        may have landed did (then it is the reply's message from here on). False when
        Slack would not show the thread: the text gathers, and the next flush asks again."""
        try:
            found = await self._find_start()
        except SLACK_FAILURES as error:
            self._pause(_failure(error))
            return False
        await self._take_up_start(found)
        return True

    async def _find_start(self) -> str | None:
        unsure = self._start_unsure
        assert unsure is not None
        if unsure.stream_text is None:
            return await self._marks.find(self._key, unsure.part, "chat.postMessage")
        return await self._marks.find_unmarked(unsure.stream_text, set(self.posted))

    async def _take_up_start(self, found: str | None) -> None:
        unsure, self._start_unsure = self._start_unsure, None
        if found is None or unsure is None:
            return  # it never landed: the next flush starts the reply again
        log.info("a reply's first message in %s had reached Slack after all; going on"
                    " with it", self._channel)
        await self._posted(found)
        if unsure.stream_text is None:
            self._message_ts = found
            self._pending = ""
            return
        self._stream_ts = found
        self._stream_part = unsure.part
        self._pending = self._pending[unsure.pending_chars:]
        del self._chunks[:unsure.chunks]

    async def _append(self) -> None:
        content = self._stream_content()
        if content:
            assert self._stream_ts is not None
            try:
                await self._client.chat_appendStream(
                    channel=self._channel, ts=self._stream_ts, **content
                )
            except SLACK_FAILURES as error:
                if may_have_landed(error):
                    # Sent again, the text could show twice; not sent, it would be missing.
                    log.info("an append to a stream in %s may have landed (%s); the"
                                " message is written whole at the end", self._channel,
                                _failure(error))
                    self._append_unsure = True
                raise
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
            total += len(quoted(char))
            if total > MARKDOWN_CHARS:
                return index
        return len(self._pending)

    async def _finish(self, text: str, ok: bool) -> None:
        try:
            if self._start_unsure is not None:
                await self._settle_start_for_good()
            if self._stream_ts is not None:
                if self._append_unsure:
                    await self._rewrite_stream(text, ok)
                    return
                if not ok and not self._text.strip():
                    # Only steps were shown (no words yet): the failure closes the same
                    # message, not a second one below it.
                    self._pending = text
                    await self._stop_stream(ok, text)
                    return
                await self._stop_stream(ok, text)
                if not ok:
                    await self._post(text, feedback=False)  # the failure, below what streamed
            elif self._message_ts is not None:
                await self._finish_edited(text, ok)
            else:
                await self._post(text, feedback=ok)
        except SlackApiError as error:
            self._slack_refused(error, closing=True)
        except SLACK_FAILURES as error:
            self._not_delivered(error)

    async def _settle_start_for_good(self) -> None:
        """Before the end of the reply: whether a first message that may have landed did,
        asked again while Slack will not show the thread (the delivery window)."""
        try:
            found = await send_once(self._find_start, None, window_s=self._window,
                                    what=f"reading the thread {self._thread_ts} in"
                                         f" {self._channel}", clock=self._clock)
        except SLACK_FAILURES as error:
            log.error("a reply's first message in %s may be in the thread, unfinished (%s);"
                      " the reply is posted whole", self._channel, _failure(error))
            found = None
        await self._take_up_start(found)

    async def _stop_stream(self, ok: bool, text: str) -> None:
        assert self._stream_ts is not None
        try:
            while self._fitting() < len(self._pending):
                await self._append()  # more than one call holds: the rest goes with the stop
            try:
                await self._close_surely(self._under_reply() if ok else None)
            except SlackApiError as error:
                if _code(error) in (STOPPED_BY_USER, NOT_STREAMING) or passing(error) or not (
                    ok or self._chunks
                ):
                    raise
                # Closed again without the steps and the buttons, which may be what Slack
                # refused; the text is what matters.
                self._chunks.clear()
                await self._close_surely(None)
        except SLACK_FAILURES as error:
            if isinstance(error, SlackApiError) and _code(error) in (STOPPED_BY_USER,
                                                                     NOT_STREAMING):
                raise
            if self._append_unsure:
                await self._rewrite_stream(text, ok)
                return
            if passing(error):
                self._not_delivered(error)  # Slack failed for the whole window
                return
            log.warning("closing the stream failed (%s); posting what it lacks",
                        _failure(error))
            await self._post(self._pending, feedback=ok)

    async def _close_surely(self, blocks: list[dict[str, Any]] | None, *,
                            content: bool = True) -> None:
        """The stream closed, with the reply's mark; a close that may have landed is
        looked for by that mark before it is sent again."""
        assert self._stream_ts is not None
        part = self._stream_part

        async def close() -> bool:
            await self._close_stream(blocks, content=content)
            return True

        async def landed() -> bool | None:
            if await self._marks.find(self._key, part, "chat.stopStream") is None:
                return None
            self._sent()  # what the close carried is in
            return True

        await send_once(close, landed, window_s=self._window, clock=self._clock,
                        what=f"the end of a reply in {self._channel}")

    async def _close_stream(self, blocks: list[dict[str, Any]] | None, *,
                            content: bool = True) -> None:
        assert self._stream_ts is not None
        await self._client.chat_stopStream(
            channel=self._channel, ts=self._stream_ts, blocks=blocks,
            metadata=reply_mark(self._key, self._stream_part),
            **(self._stream_content() if content else {}),
        )
        if content:
            self._sent()

    async def _rewrite_stream(self, text: str, ok: bool) -> None:
        """A stream whose text is uncertain (an append may have landed twice or not at
        all): closed with nothing more, then its message written whole by ``chat.update``,
        which may be sent as often as it takes."""
        try:
            await self._close_surely(None, content=False)
        except SLACK_FAILURES as error:
            if isinstance(error, SlackApiError) and _code(error) == STOPPED_BY_USER:
                raise
            if passing(error):
                self._not_delivered(error)
                return
            # Not streaming any more (it lapsed): the message stays, and is edited.
        self._message_ts, self._stream_ts = self._stream_ts, None
        self._append_unsure = False
        if ok:
            await self._finish_edited(text, ok)
            return
        await self._edit_surely(self._shown_so_far(), final=False)
        await self._post(text, feedback=False)

    async def _finish_edited(self, text: str, ok: bool) -> None:
        if not ok:
            await self._post(text, feedback=False)  # keep what was shown; say what went wrong below
            return
        first, *rest = escaped_pieces(text) or ["…"]
        try:
            await self._edit_surely(first, final=not rest)
        except SLACK_FAILURES as error:
            if passing(error):
                self._not_delivered(error)  # the edit never landed: nor would a post
                return
            log.warning("editing the reply failed (%s); posting it whole", _failure(error))
            rest = [first, *rest]
        await self._post_escaped(rest, feedback=True)

    async def _edit_surely(self, escaped: str, *, final: bool) -> None:
        """An edit, sent again while Slack fails: the same edit twice shows the same."""
        await send_once(partial(self._edit_escaped, escaped, final=final), None,
                        window_s=self._window, clock=self._clock,
                        what=f"an edit of a reply in {self._channel}")

    async def _edit_escaped(self, escaped: str, *, final: bool) -> None:
        assert self._message_ts is not None
        await self._client.chat_update(
            channel=self._channel, ts=self._message_ts,
            **_escaped_blocks(escaped, self._under_reply() if final else None)
        )

    async def _post(self, text: str, *, feedback: bool) -> None:
        await self._post_escaped(escaped_pieces(text), feedback=feedback)

    async def _post_escaped(self, pieces: list[str], *, feedback: bool) -> None:
        for number, piece in enumerate(pieces, start=1):
            if self.undelivered:
                return  # Slack failed a whole window already: the turn knows
            final = feedback and number == len(pieces)
            part = self._next_part()
            try:
                ts = await send_once(
                    partial(self._post_part, piece, part, self._under_reply() if final else None),
                    partial(self._marks.find, self._key, part, "chat.postMessage"),
                    window_s=self._window, clock=self._clock,
                    what=f"part {part} of a reply in {self._channel}")
            except SLACK_FAILURES as error:
                self._not_delivered(error)
                return
            await self._posted(ts)

    async def _post_part(self, piece: str, part: int,
                         under: list[dict[str, Any]] | None) -> str:
        response = await self._client.chat_postMessage(
            channel=self._channel, thread_ts=self._thread_ts,
            metadata=reply_mark(self._key, part), **_escaped_blocks(piece, under))
        return str(response["ts"])

    def _not_delivered(self, error: BaseException) -> None:
        """A part of the reply Slack did not take: said once, and the turn is told."""
        if not self.undelivered and not passing(error):
            # A passing failure was logged by ``send_once`` when its window ended.
            log.error("posting a reply to Slack failed: %s", _failure(error))
        self.undelivered = True

    def _slack_refused(self, error: SlackApiError, *, closing: bool = False) -> None:
        code = _code(error)
        if code == STOPPED_BY_USER or (code == NOT_STREAMING and closing):
            # The person pressed Stop: the reply ends here.
            log.info("the reader stopped the reply (%s) in %s", code, self._channel)
            self.stopped = True
            self._pending = ""
            self._chunks.clear()
            return
        if code == NOT_STREAMING and self._stream_ts is not None:
            # No Stop was pressed: Slack let the stream lapse. Edit the message instead.
            log.info("the stream lapsed in %s; editing the message instead", self._channel)
            self._message_ts, self._stream_ts = self._stream_ts, None
            self._chunks.clear()
            return
        if code in BAD_PARTS:
            self._chunks.clear()
        self._pause(code)

    def _pause(self, why: str) -> None:
        log.warning("sending to Slack failed (%s); trying again shortly", why)
        self._quiet_until = self._clock() + RETRY_PAUSE_SECONDS

    async def _posted(self, ts: str) -> None:
        self.posted.append(ts)
        if self._on_posted is not None:
            await self._on_posted(ts)

    def _under_reply(self) -> list[dict[str, Any]]:
        """What closes a complete reply: the links to its sources, the feedback buttons."""
        return [*([self._sources] if self._sources else []), feedback_block()]

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
            if self.stopped or self._finished:
                return
            await self._status(self._status_text, LOADING_MESSAGES)

    async def _status(self, status: str, loading: list[str] | None, *, final: bool = False) -> None:
        if status:
            self._status_text = status
        if self._finished and not final:
            return  # a refresh that lost the race with the end of the reply
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._channel,
                thread_ts=self._thread_ts,
                status=status,
                loading_messages=loading,
            )
        except SLACK_FAILURES as error:
            # Only assistant threads have a status line; elsewhere the reply itself is news.
            log.debug("status not shown: %s", error)


def _escaped_blocks(escaped_text: str, under: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A reply as a ``markdown`` block (Slack's own Markdown), with a notification text,
    and the blocks ``under`` it (its last message's: sources, feedback buttons).

    ``markdown_text`` cannot carry blocks, and the feedback buttons are a block.
    """
    blocks: list[dict[str, Any]] = [{"type": "markdown", "text": escaped_text or "…"},
                                    *(under or [])]
    return {"text": preview(escaped_text, NOTIFICATION_CHARS), "blocks": blocks}


def _code(error: SlackApiError) -> str:
    return error_code(error)


def _failure(error: BaseException) -> str:
    """A failure in a log line: Slack's error code, or the network's exception."""
    if isinstance(error, SlackApiError):
        return _code(error)
    return f"{type(error).__name__} {error}".strip()


def _start_text(content: dict[str, Any]) -> str:
    """The text a stream's start carried, as the thread shows its message."""
    if "markdown_text" in content:
        return str(content["markdown_text"])
    return "".join(str(chunk.get("text", "")) for chunk in content.get("chunks", [])
                   if chunk.get("type") == "markdown_text")
