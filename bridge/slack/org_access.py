"""Which workspaces of an Enterprise Grid org its org-wide install answers for, as Slack
says when an admin adds the app to workspaces or takes it away (``team_access_granted``,
``team_access_revoked``: subscribe to both).

Without them, a workspace of the org is known only once one of its requests arrives, so
work that starts outside a request (a member signing in to the console, a follow-up) could
not find the org's install before that. An event lists the workspaces' ids; noting them
(``slack_org_teams``) is all there is to do.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bridge.slack.workspace_guard import enterprise_of
from bridge.slack_api.installs.installations import Installations
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)


def listen_to_org_access(app: AsyncApp, installations: Installations, *,
                         on_removed: Callable[[str], Awaitable[object]] | None = None,
                         ) -> None:
    """``on_removed``: what else ends in a workspace the org's install no longer answers
    for (its people's own connections to remote servers)."""
    offloaded = Offloaded(installations)

    @app.event("team_access_granted")
    async def on_granted(body: dict[str, Any], event: dict[str, Any]) -> None:
        org, teams = enterprise_of(body), _teams_of(event)
        if org is None:
            log.warning("team_access_granted names no org: %s workspace(s) not noted",
                        len(teams))
            return
        await offloaded.run(lambda installs: installs.answered_for(team_ids=teams,
                                                                    enterprise_id=org))
        log.info("org %s: its install now answers for %s", org, ", ".join(teams))

    @app.event("team_access_revoked")
    async def on_revoked(body: dict[str, Any], event: dict[str, Any]) -> None:
        teams = _teams_of(event)
        await offloaded.run(lambda installs: installs.no_longer_for(teams))
        log.info("org %s: its install no longer answers for %s", enterprise_of(body),
                 ", ".join(teams))
        if on_removed is not None:
            for team in teams:
                await on_removed(team)


def _teams_of(event: dict[str, Any]) -> list[str]:
    return [str(team) for team in event.get("team_ids") or [] if team]
