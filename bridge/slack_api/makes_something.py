"""The Slack methods that make something each time they are sent: sent again after an
answer that never came (a 5xx Slack may have sent after doing it, a reset, a timeout),
they may make it twice. The SDK does not retry them (``clients.py``); their callers look
before sending again (``sure_posts.py``)."""

from __future__ import annotations

MAKES_SOMETHING = frozenset({
    "chat.postMessage", "chat.postEphemeral", "chat.scheduleMessage", "chat.meMessage",
    "chat.startStream", "chat.appendStream", "chat.stopStream",
    "files.upload", "files.completeUploadExternal", "conversations.create",
})
