"""A card's edit that Slack failed, made again later.

A card's state lives in the database (a skill draft's, a memory note's); the card in
Slack only shows it. So a decision is never lost when Slack fails the edit that shows it
(a 5xx, a reset, a timeout, after the SDK's own retries): what can go stale is the card,
whose buttons would still offer a decision already made (a click on them is answered
"already decided"). Decided, as the cheap way to put it right: the edit is tried again in
the background, with backoff, for ``CARD_RETRY_WINDOW_S``; ``chat.update`` shows the same
however often it is sent. A newer edit of the same card replaces one still waiting, so a
card never goes back to an older state. No table of "cards to redraw" is kept: a card
still stale when the window ends (or when the process stops) is put right by the next
edit of it, and the console shows the decision meanwhile. One log line when a card's
edit first fails, one when it lands or is given up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.sure_posts import RETRY_BASE_S, passing, send_once
from layers.shared.backoff import backoff_delay

log = logging.getLogger(__name__)

# Ten minutes: longer than Slack's incidents usually last, short enough that a process
# does not keep a card's edit forever.
CARD_RETRY_WINDOW_S = 600.0

CardKey = tuple[str, str]  # (channel, ts)

# The newest edit waiting for each card, and the task that sends it.
_waiting: dict[CardKey, dict[str, Any]] = {}
_tasks: dict[CardKey, asyncio.Task[None]] = {}


async def edit_card(client: AsyncWebClient, *, channel: str, ts: str, what: str,
                    window_s: float = CARD_RETRY_WINDOW_S, **content: Any) -> None:
    """``chat.update`` the card now; if Slack fails it, again in the background until it
    lands (``window_s`` at most). Raises a refusal of Slack's (the card is gone, say)."""
    key = (channel, ts)
    if key in _tasks:
        _waiting[key] = content  # the edit waiting is replaced by this newer one
        return
    try:
        await client.chat_update(channel=channel, ts=ts, **content)
    except SLACK_FAILURES as error:
        if not passing(error):
            raise
        _waiting[key] = content
        log.warning("the card of %s in %s was not edited (%s); trying again for up to"
                    " %.0f s", what, channel, type(error).__name__, window_s)
        task = asyncio.create_task(_later(client, key, what, window_s, time.monotonic()))
        _tasks[key] = task
        task.add_done_callback(lambda _: _tasks.pop(key, None))


def waiting() -> int:
    """How many cards have an edit waiting for Slack (for tests and the bench)."""
    return len(_tasks)


async def _later(client: AsyncWebClient, key: CardKey, what: str, window_s: float,
                 began: float) -> None:
    channel, ts = key
    await asyncio.sleep(backoff_delay(1, base_s=RETRY_BASE_S, max_s=RETRY_BASE_S))

    async def newest() -> None:
        content = _waiting[key]
        await client.chat_update(channel=channel, ts=ts, **content)
        if _waiting.get(key) is content:
            _waiting.pop(key, None)
        else:
            raise _Newer()  # replaced while it was sent: send the newer one too

    while True:
        try:
            await send_once(newest, None, what=f"the edit of {what} in {channel}",
                            window_s=max(0.0, window_s - (time.monotonic() - began)))
            return
        except _Newer:
            continue
        except SLACK_FAILURES as error:
            _waiting.pop(key, None)
            log.error("the card of %s in %s stays as it was until its next edit (%s)",
                      what, channel, type(error).__name__)
            return


class _Newer(Exception):
    """A newer edit of the card came while one was being sent."""
