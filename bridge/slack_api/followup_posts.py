"""Follow-ups reflection scheduled: posted in their thread when due (the store is
``reflection/followups.py``); ``CANCEL`` is what cancels them from the thread."""

from __future__ import annotations

import logging
import re
import time

from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.escaping import escaped_pieces
from bridge.slack_api.workspace_client import WorkspaceOf, serving
from layers.shared.offloaded import Offloaded
from reflection.followups import Followups

log = logging.getLogger(__name__)

# Longer than posting a follow-up takes; one whose poster died is due again after it.
POST_HOLD_S = 300.0
RETRY_AFTER_S = 60.0

# A command aimed at the follow-up itself, not any sentence that mentions one.
CANCEL = re.compile(
    r"^(please\s+)?(cancel|stop|drop|skip)\s+(the\s+|your\s+|that\s+)?"
    r"(follow[- ]?ups?|check(ing)?[- ]?back|reminders?)\s*[.!]?$",
    re.IGNORECASE,
)


async def post_due_followups(
    followups: Offloaded[Followups], client: AsyncWebClient, *, now: float | None = None,
    workspace_of: WorkspaceOf | None = None,
) -> int:
    """Post every pending follow-up whose time has come; returns how many were posted.

    Each is claimed first, so a replica or worker posting at the same moment passes
    over it; one that fails waits a minute before it is due again. Installed into many
    workspaces (``workspace_of``), each goes with its own workspace's token; one for a
    workspace that uninstalled Thoth is cancelled.
    """
    moment = time.time() if now is None else now
    posted = 0
    for due in await followups.run(lambda store: store.claim_due(moment, hold_s=POST_HOLD_S)):
        workspace = None if workspace_of is None else await workspace_of(due.team)
        if workspace_of is not None and workspace is None:
            log.info("follow-up for session %s dropped: its workspace %s uninstalled Thoth",
                     due.session_id, due.team)
            await followups.run(Followups.drop, due.session_id)
            continue
        try:
            with serving(workspace):
                for piece in escaped_pieces(due.text):
                    await client.chat_postMessage(
                        channel=due.channel, thread_ts=due.thread_ts, markdown_text=piece
                    )
        except SLACK_FAILURES as error:
            log.warning("follow-up for session %s failed: %s", due.session_id, error)
            await followups.run(Followups.retry_at, due.session_id, moment + RETRY_AFTER_S)
            continue
        await followups.run(Followups.mark_sent, due.session_id, moment)
        posted += 1
    return posted
