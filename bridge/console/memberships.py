"""Which private channels and group DMs a signed-in member is in, asked of Slack.

The console shows a member what they could read in Slack: a private channel's memory
only to its members. Slack says who is in what (``users.conversations`` with ``user``,
types ``private_channel,mpim``); it lists only the conversations Thoth's bot is in too,
which are the only ones Thoth remembers anything of.

Decided: an answer is kept for ``TTL_S`` per person, so paging through results does not
ask Slack each time, and someone who leaves a channel stops seeing it within a minute.
When Slack cannot be asked (no bot token, a refusal, a network failure) the member sees
no private channel's memory: the console fails closed, and logs one line saying why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack.web import SLACK_FAILURES
from bridge.slack.workspace_client import WorkspaceOf, serving_team

log = logging.getLogger(__name__)

TTL_S = 60.0
# Slack's most per page.
PAGE = 999
# Nobody is in more; a bound so a misbehaving cursor cannot loop for ever.
MOST_PAGES = 50
# People whose answer is kept at once.
KEPT = 1_000


class SlackMemberships:
    def __init__(self, bot: AsyncWebClient | None, *,
                 clock: Callable[[], float] = time.monotonic,
                 workspace_of: WorkspaceOf | None = None) -> None:
        """``workspace_of``: installed into many workspaces, the install each person's
        workspace is asked through."""
        self._bot = bot
        self._clock = clock
        self._workspace_of = workspace_of
        self._kept: dict[tuple[str, str], tuple[float, frozenset[str]]] = {}

    async def private_channels(self, team: str, user: str) -> frozenset[str]:
        """The private channels and group DMs ``user`` is in (with Thoth), or none."""
        key = (team, user)
        kept = self._kept.get(key)
        if kept is not None and self._clock() - kept[0] < TTL_S:
            return kept[1]
        async with serving_team(self._workspace_of, team) as installed:
            channels = await self._ask(user) if installed else frozenset()
        if len(self._kept) >= KEPT:
            self._kept.clear()
        self._kept[key] = (self._clock(), channels)
        return channels

    async def _ask(self, user: str) -> frozenset[str]:
        if self._bot is None:
            return frozenset()
        found: set[str] = set()
        cursor: str | None = None
        try:
            for _ in range(MOST_PAGES):
                page = await self._bot.users_conversations(
                    user=user, types="private_channel,mpim", limit=PAGE, cursor=cursor)
                found.update(str(channel["id"]) for channel in page.get("channels") or [])
                cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
                if not cursor:
                    break
        except SlackApiError as error:
            log.warning("Slack would not say which private channels %s is in (%s): showing"
                        " none", user, error.response.get("error"))
            return frozenset()
        except (*SLACK_FAILURES, SlackClientError) as error:
            log.warning("Slack could not be asked which private channels %s is in (%s):"
                        " showing none", user, type(error).__name__)
            return frozenset()
        return frozenset(found)
