"""Where an MCP asker may propose a memory note, and where its card goes.

A person may propose a note in their own DM with Thoth, or in a public channel of their
workspace. Decided: a channel counts only on Slack's word (``conversations.info``, asked
at the call), not on Thoth's memory of it: a channel made private or archived since
Thoth last heard it must not take a note meant for everyone. Without a Slack token
nothing can vouch for a channel, so only the DM is offered. Private channels and group
DMs wait for membership checks (over HTTP, with a person's token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.mcp.asker import Asker
from layers.errors import BadInput
from layers.places import Place

if TYPE_CHECKING:
    from slack_sdk import WebClient


DM = "dm"


@dataclass(frozen=True)
class NotePlaces:
    """``slack``: the bot's client, None where Slack is not configured."""

    slack: WebClient | None

    def place(self, asker: Asker, where: str) -> Place:
        """The place ``where`` names (``dm``, or a channel id), if ``asker`` may write there."""
        wanted = where.strip()
        if wanted.lower() in ("", DM):
            return Place(asker.team, asker.viewer.channel, "im", None)
        if asker.local or self.slack is None:
            raise BadInput(f"notes go to your DM with Thoth here (where: {DM}): no Slack"
                           " workspace is configured to vouch for a channel")
        from slack_sdk.errors import SlackApiError

        try:
            info = self.slack.conversations_info(channel=wanted)["channel"]
        except SlackApiError as error:
            raise BadInput(f"Slack shows Thoth no channel {wanted!r}"
                           f" ({error.response.get('error')})") from error
        public = info.get("is_channel") and not any(
            info.get(flag) for flag in ("is_private", "is_im", "is_mpim", "is_archived"))
        workspace = info.get("context_team_id") or asker.team
        if not public or workspace != asker.team:
            raise BadInput(f"{wanted} is not a public channel of your workspace: notes go to"
                           f" your DM with Thoth ({DM}) or a public channel")
        return Place(asker.team, wanted, "public", None, info.get("name"))

    def name_of(self, asker: Asker) -> str:
        """How MEMORY.md will name who proposed the note: their Slack name where Slack can
        say it, else their id (or login name)."""
        if self.slack is None or asker.local:
            return asker.user
        from slack_sdk.errors import SlackApiError

        try:
            user = self.slack.users_info(user=asker.user)["user"]
        except SlackApiError:
            return asker.user
        profile = user.get("profile") or {}
        return str(profile.get("display_name") or user.get("real_name") or user.get("name")
                   or asker.user)
