"""Which Slack messages the agent answers, and what they say once the mention is gone."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Edits, deletions, joins and the like are not someone talking to the agent.
IGNORED_SUBTYPES = frozenset(
    {
        "bot_message",
        "message_changed",
        "message_deleted",
        "message_replied",
        "channel_join",
        "channel_leave",
        "assistant_app_thread",
    }
)
_MENTION = re.compile(r"<@([A-Z0-9]+)(\|[^>]*)?>")
# What Thoth keeps of a file object that came with a message: what it takes to name the
# file, download it (``slack_api/file_downloads.py``) and point back to it. Slack's object
# holds much more (previews, shares, thumbnails), none of it needed.
FILE_FIELDS = ("id", "name", "title", "mimetype", "filetype", "size", "mode", "url_private",
               "url_private_download", "permalink", "file_access")


@dataclass(frozen=True)
class Incoming:
    """A human message addressed to the agent."""

    team: str
    channel: str
    user: str
    text: str
    ts: str
    thread_root: str  # the thread it belongs to (its own ts for a new thread)
    event_id: str | None
    event_channel_type: str | None
    # The speaker's own workspace, when Slack says (Slack Connect events carry it).
    user_team: str | None = None
    # The Enterprise Grid org the event came from, when Slack says.
    enterprise: str | None = None
    # Set for a channel shared across the org's workspaces: its memory is the org's
    # (``directory.place_team``), whichever workspace the event names.
    shared_by_org: str | None = None
    # The file objects that came with the message (``FILE_FIELDS`` of each), in order:
    # the only files its turn may read (``message_files.py``).
    files: tuple[dict[str, Any], ...] = ()

    @property
    def place_team(self) -> str:
        """Whose memory this conversation is: the workspace's, or the org's for a channel
        shared across its workspaces. Slack calls still go to ``team``."""
        return self.shared_by_org or self.team

    @property
    def session_key(self) -> str:
        return f"slack:{self.place_team}:{self.channel}:{self.thread_root}"


def from_event(
    event: dict[str, Any], *, team: str, event_id: str | None, bot_user: str | None,
    enterprise: str | None = None,
) -> Incoming | None:
    """The event as an ``Incoming`` message, or None if it is not a person talking.

    A message of files alone (``file_share`` with no words) is someone talking too."""
    if event.get("bot_id") or event.get("subtype") in IGNORED_SUBTYPES:
        return None
    user = event.get("user")
    if not user or user == bot_user:
        return None
    text = strip_mention(str(event.get("text") or ""), bot_user)
    ts = str(event.get("ts") or "")
    files = files_of(event)
    if not (text or files) or not ts:
        return None
    return Incoming(
        # The installation's workspace, not the author's: in a shared channel people from
        # two workspaces talk in one thread, and it must stay one session.
        team=team or str(event.get("team") or ""),
        channel=str(event.get("channel")),
        user=str(user),
        text=text,
        ts=ts,
        thread_root=str(event.get("thread_ts") or ts),
        event_id=event_id,
        event_channel_type=event.get("channel_type"),
        user_team=event.get("user_team") or None,
        enterprise=enterprise,
        files=files,
    )


def files_of(message: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The file objects of a message (an event, or a message Slack listed), each cut to
    ``FILE_FIELDS``; objects without an id are no file Thoth could name."""
    found = message.get("files")
    return tuple(
        {field: file[field] for field in FILE_FIELDS if field in file}
        for file in (found if isinstance(found, list) else [])
        if isinstance(file, dict) and file.get("id")
    )


def mentions(text: str, user: str | None) -> bool:
    return user is not None and any(m.group(1) == user for m in _MENTION.finditer(text))


def strip_mention(text: str, bot_user: str | None) -> str:
    """The text without the agent's own mention (other people's mentions stay)."""
    if bot_user is None:
        return text.strip()
    stripped = _MENTION.sub(lambda m: "" if m.group(1) == bot_user else m.group(0), text)
    return " ".join(stripped.split())
