"""`/done`: end the conversation here; Thoth reflects on it.

Only someone who took part may end a session: ending it starts its reflection, which is
not a bystander's to start. A terminal chat is its one person's, so there it always may.
"""

from __future__ import annotations

import logging
import re

from bridge import messages
from bridge.commands import Command, CommandServices, Invocation, Reply, Where

log = logging.getLogger(__name__)


async def done(invocation: Invocation, services: CommandServices) -> Reply:
    key = invocation.session_key
    terminal = invocation.where is Where.TERMINAL
    if key is None:
        return Reply(messages.NOTHING_TO_END, ends_chat=terminal)
    if not terminal:
        session = await services.sessions.run(lambda sessions: sessions.find_open(key))
        user = invocation.user
        if session is not None and not await services.transcript.run(
            lambda transcript: transcript.took_part(session.id, user)
        ):
            log.info("%s may not end session %s: they took no part in it", user, session.id)
            return Reply(messages.NOT_YOUR_SESSION, in_thread=True)
    ended = await services.session_end.end_open(key)
    if terminal:
        return Reply((ended.printed if ended else "") or messages.SESSION_ENDED,
                     ends_chat=True)
    if ended is None:
        return Reply(messages.NO_OPEN_SESSION, in_thread=True)
    if not ended.reflected:
        return Reply(messages.SESSION_ENDED, in_thread=True)
    # The reflection process has posted the summary (and any approval card) in the thread.
    return Reply()


COMMAND = Command(
    name="done",
    help="End the conversation here; Thoth reflects on it",
    handler=done,
    in_thread=re.compile(r"^\s*/?done[.!]?\s*$", re.IGNORECASE),
    terminal=True,
)
