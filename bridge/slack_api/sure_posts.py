"""A message sent to Slack once, even when Slack fails while it is sent.

A post that fails with a 5xx, a reset connection or a timeout may still have been made:
Slack can make the message and fail before answering, and the answer can be lost on the
way back. Sending it again blindly would show the reply twice; giving up would lose it.
So every message of a reply carries Thoth's mark in its message metadata (Slack's
``metadata`` argument of ``chat.postMessage`` and ``chat.stopStream``: an ``event_type``
and a free ``event_payload``), naming the reply and which part of it the message is. After
a failure that may have landed, the thread is read (``conversations.replies`` with
``include_all_metadata``: without it Slack leaves metadata out) and the message is sent
again only if its mark is not there.

``chat.startStream`` takes no metadata (Slack's method reference lists none), so a start
that may have landed is found by what it carried: the newest unmarked message of the
app's in the thread whose text is the text the start sent (``find_unmarked``). The
thread's lane lets one turn at a time reply in it, so no other reply's start can match.

Retries go through the client, so each waits its turn in the workspace's rate budget
(``rate_budget.py``); a 429 is waited out there and does not count as a failure. A reply
keeps trying for the client's ``delivery_window_s`` (``SLACK_DELIVERY_WINDOW_S``, three
minutes unless set), with backoff, then the caller is told it was not delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.error import URLError

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.rate_budget import DELIVERY_WINDOW_S, BudgetedAsyncWebClient, http_status
from layers.shared.backoff import backoff_delay

log = logging.getLogger(__name__)

REPLY_EVENT = "thoth_reply"
RATELIMITED = "ratelimited"
# A message refused as rate-limited (after the client's own retries, each waiting out
# Slack's Retry-After for the whole workspace) is sent again, this many times in all: in
# a burst, a channel's posts go about one a second, and none may be dropped.
RATELIMITED_TRIES = 20
RETRY_BASE_S = 1.0
# At most this long between two tries: Slack's return is seen within it.
RETRY_MAX_S = 10.0
# A thread read to find a mark: Slack's page is at most 1 000 messages; Thoth's
# threads are far shorter, and a page of 200 is one Tier 3 call.
PAGE = 200
MOST_PAGES = 10
T = TypeVar("T")


def reply_mark(reply: str, part: int) -> dict[str, Any]:
    """The metadata of a reply's ``part``-th message (``reply``: the reply's own key)."""
    return {"event_type": REPLY_EVENT, "event_payload": {"reply": reply, "part": part}}


def has_mark(message: dict[str, Any], reply: str, part: int) -> bool:
    metadata = message.get("metadata") or {}
    payload = metadata.get("event_payload") or {}
    return (metadata.get("event_type") == REPLY_EVENT and payload.get("reply") == reply
            and payload.get("part") == part)


def may_have_landed(error: BaseException) -> bool:
    """Whether Slack may have done a call that failed: a 5xx, or a connection that
    dropped or timed out after it opened (not one that never opened, not a refusal)."""
    if isinstance(error, SlackApiError):
        return http_status(error) >= 500
    if isinstance(error, aiohttp.ClientConnectorError | ConnectionRefusedError) or (
            isinstance(error, URLError) and isinstance(error.reason, ConnectionRefusedError)):
        return False  # the connection never opened: nothing reached Slack
    return isinstance(error, OSError | aiohttp.ClientError)


def passing(error: BaseException) -> bool:
    """Whether a failure is one Slack gets over (worth trying again): a 5xx, the network,
    its rate limit; not a refusal of the call itself."""
    if isinstance(error, SlackApiError):
        return http_status(error) >= 500 or error_code(error) == RATELIMITED
    return isinstance(error, OSError | aiohttp.ClientError)


def error_code(error: SlackApiError) -> str:
    response: Any = error.response
    return str(response.get("error")) if hasattr(response, "get") else f"HTTP {http_status(error)}"


def window_of(client: AsyncWebClient) -> float:
    """How long a reply sent through ``client`` keeps trying."""
    return (client.delivery_window_s if isinstance(client, BudgetedAsyncWebClient)
            else DELIVERY_WINDOW_S)


class ThreadMarks:
    """A thread's messages as Slack has them, to find Thoth's own by their mark."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str) -> None:
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts

    async def messages(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MOST_PAGES):
            try:
                response = await self._client.conversations_replies(
                    channel=self._channel, ts=self._thread_ts, include_all_metadata=True,
                    limit=PAGE, cursor=cursor)
            except SlackApiError as error:
                if passing(error):
                    raise  # Slack failing: asked again after a pause
                # Refused: nothing in it yet (thread_not_found), or a token without the
                # history scope. Nothing can be found: the message is sent again (a
                # possible double, said in the log, rather than a reply lost).
                if error_code(error) != "thread_not_found":
                    log.warning("the thread %s in %s cannot be read for a reply's mark"
                                " (%s): sending again", self._thread_ts, self._channel,
                                error_code(error))
                return found
            found.extend(response.get("messages") or [])
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        return found

    async def find(self, reply: str, part: int, made_by: str) -> str | None:
        """The ts of the reply's ``part``-th message, if Slack has it (then ``made_by``,
        the method that made or marked it, worked after all)."""
        for message in await self.messages():
            if has_mark(message, reply, part):
                self._worked(made_by)
                return str(message["ts"])
        return None

    async def find_unmarked(self, text: str, known: set[str]) -> str | None:
        """The newest message of an app in the thread, not among ``known``, with no
        metadata, whose text is ``text``: a stream start that landed unanswered."""
        for message in reversed(await self.messages()):
            if (message.get("bot_id") and not message.get("metadata")
                    and str(message["ts"]) not in known and message["ts"] != self._thread_ts
                    and (message.get("text") or "") == text):
                self._worked("chat.startStream")
                return str(message["ts"])
        return None

    def _worked(self, method: str) -> None:
        """A call that failed was done by Slack all the same: it is not failing."""
        if isinstance(self._client, BudgetedAsyncWebClient) and self._client.health:
            self._client.health.answered(method)


async def send_once(send: Callable[[], Awaitable[T]],
                    landed: Callable[[], Awaitable[T | None]] | None, *, what: str,
                    window_s: float, clock: Callable[[], float] = time.monotonic) -> T:
    """``send``, again while Slack fails, for ``window_s`` at most; after a failure that
    may have landed, ``landed`` says first whether it did (its answer is returned then).
    With ``landed`` None the call is one that may be sent twice (``chat.update``).

    Raises the refusal of a call Slack will not do, or the last failure when the window
    is over (logged: the reply, or this part of it, was not delivered). One line when a
    message first fails, one when it gets through.
    """
    tries = _Tries(what, window_s, clock)
    unsure = False
    while True:
        try:
            if unsure and landed is not None:
                found = await landed()
                if found is not None:
                    log.info("%s had reached Slack after all (found by its mark)", what)
                    return found
                unsure = False
            answer = await send()
        except SLACK_FAILURES as error:
            if tries.rate_limited(error):
                continue  # the budget holds the method: the next call waits its turn
            unsure = unsure or may_have_landed(error)
            found = await tries.wait_after(error, landed if unsure else None)
            if found is not None:
                return found
        else:
            tries.through()
            return answer


class _Tries:
    """The tries of one ``send_once``: its window, its backoff, its log lines."""

    def __init__(self, what: str, window_s: float, clock: Callable[[], float]) -> None:
        self._what = what
        self._window_s = window_s
        self._clock = clock
        self._deadline = clock() + window_s
        self._failures = 0
        self._ratelimited = 0

    def rate_limited(self, error: BaseException) -> bool:
        """Whether Slack refused the call as rate-limited (raised after too many)."""
        if not (isinstance(error, SlackApiError) and error_code(error) == RATELIMITED
                and http_status(error) < 500):
            return False
        self._ratelimited += 1
        if self._ratelimited >= RATELIMITED_TRIES:
            raise error
        log.info("%s waits for Slack's rate limit (try %d)", self._what, self._ratelimited)
        return True

    async def wait_after(self, error: BaseException,
                         last_look: Callable[[], Awaitable[T | None]] | None) -> T | None:
        """Wait before the next try; raises ``error`` when it is a refusal or the window
        is over (after a ``last_look``: the last try may have landed)."""
        if not passing(error):
            raise error
        self._failures += 1
        why = _why(error)
        if self._failures == 1:
            log.warning("%s did not reach Slack (%s); trying again for up to %.0f s",
                        self._what, why, self._window_s)
        left = self._deadline - self._clock()
        if left > 0:
            await asyncio.sleep(min(backoff_delay(self._failures, base_s=RETRY_BASE_S,
                                                  max_s=RETRY_MAX_S), left))
            return None
        if last_look is not None:
            with contextlib.suppress(*SLACK_FAILURES):
                found = await last_look()
                if found is not None:
                    return found
        log.error("%s was not delivered: Slack kept failing for %.0f s (%s)", self._what,
                  self._window_s, why)
        raise error

    def through(self) -> None:
        if self._failures:
            log.warning("%s reached Slack after %d failed tries", self._what,
                        self._failures)


def _why(error: BaseException) -> str:
    if isinstance(error, SlackApiError):
        return f"HTTP {http_status(error)} {error_code(error)}"
    return f"{type(error).__name__} {error}".strip()
