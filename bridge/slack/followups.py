"""Follow-ups reflection scheduled: posted in their thread when due (the store is
``reflection/followups.py``); ``CANCEL`` is what cancels them from the thread."""

from __future__ import annotations

import asyncio
import logging
import re
import time

from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack.escaping import escaped_pieces
from bridge.slack.web import SLACK_FAILURES
from reflection.followups import Followups

log = logging.getLogger(__name__)

# A command aimed at the follow-up itself, not any sentence that mentions one.
CANCEL = re.compile(
    r"^(please\s+)?(cancel|stop|drop|skip)\s+(the\s+|your\s+|that\s+)?"
    r"(follow[- ]?ups?|check(ing)?[- ]?back|reminders?)\s*[.!]?$",
    re.IGNORECASE,
)


async def post_due_followups(
    followups: Followups, client: AsyncWebClient, *, now: float | None = None
) -> int:
    """Post every pending follow-up whose time has come; returns how many were posted."""
    moment = time.time() if now is None else now
    posted = 0
    for due in await asyncio.to_thread(followups.due, moment):
        try:
            for piece in escaped_pieces(due.text):
                await client.chat_postMessage(
                    channel=due.channel, thread_ts=due.thread_ts, markdown_text=piece
                )
        except SLACK_FAILURES as error:
            # Left pending: the next minute's run tries again.
            log.warning("follow-up for session %s failed: %s", due.session_id, error)
            continue
        await asyncio.to_thread(followups.mark_sent, due.session_id, moment)
        posted += 1
    return posted
