"""Where an MCP asker may propose a memory note, and where its card goes.

A person may propose a note in their own DM with Thoth, in a public channel of their
workspace, or (over HTTP, where Slack says which they are in) in a private channel or
group DM they are in. Decided: a channel counts only on Slack's word
(``conversations.info``, asked at the call), not on Thoth's memory of it: a channel made
private or archived since Thoth last heard it must not take a note meant for everyone.
Without a Slack token nothing can vouch for a channel, so only the DM is offered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.mcp.asker import Asker
from bridge.slack_api.directory import channel_kind, user_name
from layers.shared.errors import BadInput
from layers.shared.places import Place

if TYPE_CHECKING:
    from slack_sdk import WebClient


DM = "dm"


@dataclass(frozen=True)
class NotePlaces:
    """``slack_of``: the bot's client for a workspace (installed into many, each its own
    install's), None where Slack is not configured for it."""

    slack_of: Callable[[str], WebClient | None]

    def place(self, asker: Asker, where: str) -> Place:
        """The place ``where`` names (``dm``, or a channel id), if ``asker`` may write there."""
        wanted = where.strip()
        if wanted.lower() in ("", DM):
            return Place(asker.team, asker.viewer.channel, "im", None)
        slack = None if asker.local else self.slack_of(asker.team)
        if slack is None:
            raise BadInput(f"notes go to your DM with Thoth here (where: {DM}): no Slack"
                           " workspace is configured to vouch for a channel")
        from slack_sdk.errors import SlackApiError

        try:
            info = slack.conversations_info(channel=wanted)["channel"]
        except SlackApiError as error:
            raise BadInput(f"Slack shows Thoth no channel {wanted!r}"
                           f" ({error.response.get('error')})") from error
        # Another person's DM, or one only its id names (a person's own DM is ``dm``).
        kind = channel_kind(info)
        workspace = info.get("context_team_id") or asker.team
        if workspace != asker.team or info.get("is_archived") or kind == "im" or (
                kind != "public" and wanted not in asker.member_of):
            raise BadInput(f"{wanted} is not a channel you may write to: notes go to your DM"
                           f" with Thoth ({DM}), a public channel of your workspace, or"
                           " (over HTTP) a private channel you are in")
        return Place(asker.team, wanted, kind, None, info.get("name"))

    def name_of(self, asker: Asker) -> str:
        """How MEMORY.md will name who proposed the note: their Slack name where Slack can
        say it, else their id (or login name)."""
        slack = None if asker.local else self.slack_of(asker.team)
        if slack is None:
            return asker.user
        from slack_sdk.errors import SlackApiError

        try:
            user = slack.users_info(user=asker.user)["user"]
        except SlackApiError:
            return asker.user
        return user_name(user) or asker.user
