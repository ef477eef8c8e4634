"""Bolt's installation and OAuth-state store interfaces, kept on Thoth's own database.

Bolt's OAuth flow (``install_flow.py``) and its token-revocation listeners call these;
the work is ``installations.py``'s and ``oauth_states.py``'s, in a worker thread, never
on the loop that takes Slack's requests.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.oauth.installation_store.async_installation_store import (
    AsyncInstallationStore,
)
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from bridge.slack_api.installs.installations import Installations, Installed
from bridge.slack_api.installs.oauth_states import OAuthStates
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)


class InstallationsForBolt(AsyncInstallationStore):
    def __init__(self, installations: Installations, *,
                 on_removed: Callable[[str], Awaitable[object]] | None = None) -> None:
        """``on_removed``: what else ends with a workspace's install (its people's own
        connections to remote servers), given the workspace."""
        self._installations = Offloaded(installations)
        self._on_removed = on_removed

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_save(self, installation: Installation) -> None:
        await self._keep(installation.to_bot(), installer=installation.user_id or None)

    async def async_save_bot(self, bot: Bot) -> None:
        await self._keep(bot, installer=None)

    async def _keep(self, bot: Bot, *, installer: str | None) -> None:
        install = Installed(
            enterprise_id=bot.enterprise_id, team_id=bot.team_id,
            is_enterprise_install=bool(bot.is_enterprise_install), bot_token=bot.bot_token,
            bot_id=bot.bot_id, bot_user_id=bot.bot_user_id,
            bot_scopes=",".join(bot.bot_scopes), app_id=bot.app_id,
            installer_user_id=installer, installed_at=float(bot.installed_at),
        )
        await self._installations.run(lambda installs: installs.keep(install))
        log.info("Thoth was installed in %s", install.installed_in)

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        install = await self._installations.run(lambda installs: installs.find(
            enterprise_id=enterprise_id, team_id=team_id,
            is_enterprise_install=bool(is_enterprise_install)))
        if install is None:
            return None
        return Bot(
            app_id=install.app_id, enterprise_id=install.enterprise_id,
            team_id=install.team_id, bot_token=install.bot_token,
            bot_id=install.bot_id or "", bot_user_id=install.bot_user_id or "",
            bot_scopes=install.bot_scopes, is_enterprise_install=install.is_enterprise_install,
            installed_at=install.installed_at,
        )

    async def async_find_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        bot = await self.async_find_bot(enterprise_id=enterprise_id, team_id=team_id,
                                        is_enterprise_install=is_enterprise_install)
        if bot is None or user_id is not None:
            return None  # no user's install is kept: Thoth asks for no user scopes
        return Installation(
            app_id=bot.app_id, enterprise_id=bot.enterprise_id, team_id=bot.team_id,
            bot_token=bot.bot_token, bot_id=bot.bot_id, bot_user_id=bot.bot_user_id,
            bot_scopes=bot.bot_scopes, is_enterprise_install=bot.is_enterprise_install,
            user_id="", installed_at=bot.installed_at,
        )

    async def async_delete_bot(self, *, enterprise_id: str | None,
                               team_id: str | None) -> None:
        # An org-wide install answers for the org's workspaces: each of them ends with it.
        teams = [team_id] if team_id else (await self._installations.run(
            lambda installs: installs.teams_of(enterprise_id)) if enterprise_id else [])
        removed = await self._installations.run(lambda installs: installs.remove(
            enterprise_id=enterprise_id, team_id=team_id))
        log.warning("Slack revoked Thoth's token for %s: %s", team_id or enterprise_id,
                    "its install is deleted (its memory is kept)" if removed
                    else "no install was kept for it")
        on_removed = self._on_removed
        if on_removed is None:
            return
        for team in teams:
            try:
                await on_removed(team)
            except Exception:
                log.exception("what ends with the install of %s could not all end", team)

    async def async_delete_installation(self, *, enterprise_id: str | None,
                                        team_id: str | None,
                                        user_id: str | None = None) -> None:
        if user_id is None:
            await self.async_delete_bot(enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_all(self, *, enterprise_id: str | None,
                               team_id: str | None) -> None:
        await self.async_delete_bot(enterprise_id=enterprise_id, team_id=team_id)


class OAuthStatesForBolt(AsyncOAuthStateStore):
    def __init__(self, states: OAuthStates) -> None:
        self._states = Offloaded(states)

    @property
    def logger(self) -> logging.Logger:
        return log

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        return await self._states.run(lambda states: states.issue())

    async def async_consume(self, state: str) -> bool:
        if not state:
            return False
        return await self._states.run(lambda states: states.consume(state))
