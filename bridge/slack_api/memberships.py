"""Which private channels and group DMs a signed-in member is in, asked of Slack.

The console shows a member what they could read in Slack: a private channel's memory
only to its members. Slack says who is in what (``users.conversations`` with ``user``);
it lists only the private conversations Thoth's bot is in too, which are the only ones
Thoth remembers anything of. On Enterprise Grid, a channel shared across the org's
workspaces keeps its memory under the org (``directory.place_team``): the member's
channels of that kind, and their org, are kept too, so its members read it wherever
they sign in. Public channels are listed for that alone.

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

from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import channel_info
from bridge.slack_api.workspace_client import WorkspaceOf, served, serving_team
from layers.shared.places.memberships import NONE, Memberships
from layers.shared.places.visibility import SHARED_BY_CHANNEL

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
        self._kept: dict[tuple[str, str], tuple[float, Memberships]] = {}
        # With one bot token: its workspace's org (auth.test), asked once when needed.
        self._token_org: str | None = None

    async def of(self, team: str, user: str) -> Memberships:
        """What ``user`` is in, or nothing when Slack cannot say."""
        key = (team, user)
        kept = self._kept.get(key)
        if kept is not None and self._clock() - kept[0] < TTL_S:
            return kept[1]
        async with serving_team(self._workspace_of, team) as installed:
            found = await self._ask(user) if installed else NONE
        if len(self._kept) >= KEPT:
            self._kept.clear()
        self._kept[key] = (self._clock(), found)
        return found

    async def _ask(self, user: str) -> Memberships:
        if self._bot is None:
            return NONE
        private: set[str] = set()
        org_shared: set[str] = set()
        cursor: str | None = None
        try:
            for _ in range(MOST_PAGES):
                page = await self._bot.users_conversations(
                    user=user, types="public_channel,private_channel,mpim", limit=PAGE,
                    cursor=cursor)
                for channel in page.get("channels") or []:
                    info = channel_info(str(channel["id"]), channel)
                    if info.org_shared:
                        org_shared.add(info.id)
                    elif info.channel_type in SHARED_BY_CHANNEL:
                        private.add(info.id)
                cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
                if not cursor:
                    break
            org = await self._org()
        except SlackApiError as error:
            log.warning("Slack would not say which private channels %s is in (%s): showing"
                        " none", user, error.response.get("error"))
            return NONE
        except (*SLACK_FAILURES, SlackClientError) as error:
            log.warning("Slack could not be asked which private channels %s is in (%s):"
                        " showing none", user, type(error).__name__)
            return NONE
        return Memberships(frozenset(private), org,
                           frozenset(org_shared) if org else frozenset())

    async def _org(self) -> str | None:
        """The Enterprise Grid org of the workspace being asked about."""
        workspace = served()
        if workspace is not None:
            return workspace.enterprise_id
        if self._token_org is None and self._bot is not None:
            self._token_org = str((await self._bot.auth_test()).get("enterprise_id") or "")
        return self._token_org or None
