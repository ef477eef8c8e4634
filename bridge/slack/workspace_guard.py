"""Requests from a workspace this bot token is not for: answered, never acted on.

With one bot token Thoth is installed in one workspace (``auth.test`` says which, and
which Enterprise Grid org). Slack sends it nothing else, but a request for another
workspace (a misrouted proxy, a second app sharing the signing secret, a replay from
elsewhere) would otherwise be taken as this workspace's: its words stored as this
workspace's memory, answered with this workspace's. DESIGN.md's rule (a workspace's
memory never reaches another) is kept here, before any listener: such a request gets
200 (so Slack does not retry it), a slash command one line saying why, the log one
line, and nothing is stored. A partner in a Slack Connect channel is not such a
request: Slack delivers it for the installing workspace (``team_id``), naming the
person's own team in ``user_team``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse

log = logging.getLogger(__name__)

NOT_INSTALLED = ("Thoth is not installed in this workspace: its memory belongs to the"
                 " workspace it was installed in, and is not shared with others.")


def only_its_workspace(app: AsyncApp, identity: Mapping[str, Any]) -> None:
    team = str(identity.get("team_id") or "") or None
    enterprise = str(identity.get("enterprise_id") or "") or None

    @app.middleware
    async def from_its_workspace(body: dict[str, Any],
                                 next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        sender = _team_of(body)
        if sender is None or team is None or sender == team or (
                enterprise is not None and enterprise_of(body) == enterprise):
            await next()
            return None
        log.warning("a request for workspace %s, not %s (this bot token's): answered,"
                    " nothing stored", sender, team)
        if body.get("command"):
            return BoltResponse(status=200, body=NOT_INSTALLED)
        return BoltResponse(status=200, body="")


def _team_of(body: Mapping[str, Any]) -> str | None:
    team = body.get("team_id") or (body.get("team") or {}).get("id")
    return str(team) if team else None


def enterprise_of(body: Mapping[str, Any]) -> str | None:
    """The Enterprise Grid org a request came from, when Slack names one."""
    enterprise = body.get("enterprise_id") or (body.get("enterprise") or {}).get("id")
    return str(enterprise) if enterprise else None
