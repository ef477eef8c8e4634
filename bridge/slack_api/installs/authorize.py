"""Each Slack request authorized by the install of the workspace it comes from.

Bolt's own authorize for an installation store asks Slack ``auth.test`` on every request
(a Tier 4 method: a burst of mentions would spend the workspace's budget on it); the
install already holds what ``auth.test`` would say, so it is read from there. No install
for the workspace: Bolt answers Slack with its "please install" line and runs nothing.
The lookup is a database read, kept for two seconds (``installations.FOUND_FOR_S``): a
burst of deliveries does not read it once per request, and a revoked token stops being
used at once here and within those seconds on another replica.

After authorizing, the workspace is served (``workspace_client.py``) for everything the
request starts: its token on every Slack call, its budget, its own bot user.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.response import BoltResponse

from bridge.slack_api.installs.installations import Installations, Installed
from bridge.slack_api.workspace_client import Workspace, serve
from layers.shared.offloaded import Offloaded


class AuthorizedByInstall(AsyncAuthorize):
    def __init__(self, installations: Installations) -> None:
        self._installations = Offloaded(installations)
        # The org workspaces already noted (``Installations.answered_for``), so that each
        # is written once per process, not once per request.
        self._noted: set[tuple[str, str]] = set()

    async def __call__(
        self, *, context: AsyncBoltContext, enterprise_id: str | None, team_id: str | None,
        user_id: str | None, **_actor: Any,
    ) -> AuthorizeResult | None:
        install = await self._installations.run(lambda installs: installs.find(
            enterprise_id=enterprise_id, team_id=team_id,
            is_enterprise_install=bool(context.is_enterprise_install)))
        if install is None:
            return None
        org = install.enterprise_id
        if install.is_enterprise_install and org and team_id and (
                (team_id, org) not in self._noted):
            await self._installations.run(lambda installs: installs.answered_for(
                team_ids=[team_id], enterprise_id=org))
            self._noted.add((team_id, org))
        return AuthorizeResult(
            enterprise_id=install.enterprise_id or enterprise_id,
            team_id=team_id or install.team_id, bot_user_id=install.bot_user_id,
            bot_id=install.bot_id, bot_token=install.bot_token,
            bot_scopes=install.bot_scopes, user_id=user_id,
        )


class InstalledWorkspaces:
    """The workspace a team id names, for work that starts outside a request."""

    def __init__(self, installations: Installations) -> None:
        self._installations = Offloaded(installations)

    async def __call__(self, team_id: str) -> Workspace | None:
        install = await self._installations.run(
            lambda installs: installs.find(enterprise_id=None, team_id=team_id))
        return None if install is None else _workspace(install, team_id)


def _workspace(install: Installed, team_id: str | None) -> Workspace:
    return Workspace(team_id=team_id or install.team_id, enterprise_id=install.enterprise_id,
                     bot_token=install.bot_token, bot_user_id=install.bot_user_id)


def serve_the_authorized_workspace(app: AsyncApp) -> None:
    """Serve the request's workspace for the rest of its dispatch. Bolt's ``next()`` only
    marks the middleware passed (the listeners run after every middleware returned, in
    the same task), so the workspace is set here and not reset: the HTTP server scopes it
    to the request (``http_server.py``), and each listener's work copies it."""

    @app.middleware
    async def serve_its_workspace(context: AsyncBoltContext,
                                  next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        result = context.authorize_result
        if result is not None and result.bot_token:
            serve(Workspace(team_id=context.team_id or result.team_id,
                            enterprise_id=context.enterprise_id or result.enterprise_id,
                            bot_token=result.bot_token, bot_user_id=result.bot_user_id))
        await next()
        return None
