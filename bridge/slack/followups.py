"""Follow-ups reflection scheduled: posted in their thread when due, cancellable there."""

from __future__ import annotations

import logging
import re
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from layers.storage.database import Database

log = logging.getLogger(__name__)

# A command aimed at the follow-up itself, not any sentence that mentions one.
CANCEL = re.compile(
    r"^(please\s+)?(cancel|stop|drop|skip)\s+(the\s+|your\s+|that\s+)?"
    r"(follow[- ]?ups?|check(ing)?[- ]?back|reminders?)\s*[.!]?$",
    re.IGNORECASE,
)


def post_due_followups(db: Database, client: WebClient, *, now: float | None = None) -> int:
    """Post every pending follow-up whose time has come; returns how many were posted."""
    moment = time.time() if now is None else now
    with db.read() as conn:
        due = conn.execute(
            "SELECT session_id, channel, thread_ts, text FROM followups"
            " WHERE state = 'pending' AND due_at <= ? AND team != 'local'",
            (moment,),
        ).fetchall()
    posted = 0
    for session_id, channel, thread_ts, text in due:
        try:
            client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text)
        except SlackApiError as error:
            log.warning("follow-up for session %s failed: %s", session_id, error.response["error"])
            continue
        with db.write() as conn:
            conn.execute(
                "UPDATE followups SET state = 'sent', sent_at = ? WHERE session_id = ?",
                (moment, session_id),
            )
        posted += 1
    return posted


def cancel_followups(db: Database, *, channel: str, thread_ts: str) -> int:
    """Cancel the pending follow-ups of a thread (someone said so in it)."""
    with db.write() as conn:
        return conn.execute(
            "UPDATE followups SET state = 'cancelled' WHERE state = 'pending'"
            " AND channel = ? AND thread_ts = ?",
            (channel, thread_ts),
        ).rowcount
