"""Slack's Web API as this process reaches it, built once by the composition root
(``bridge/app.py``) and handed to every surface that speaks to Slack: the Bolt transport,
the console, MCP, the worker, the reflection child and `thoth doctor`.

Before, each of them built its own clients and its own view of the installs; now the
console and MCP mounted beside Slack's endpoint share the transport's client, its installs
(kept two seconds, dropped at once when one is deleted here) and the memberships Slack
told. Each part is made on first use: most commands never speak to Slack, and the SDK
takes a while to import.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from bridge.settings import Settings
from layers.shared.dependency_health import DependencyHealth
from layers.shared.storage.database import Database

if TYPE_CHECKING:
    from slack_sdk import WebClient

    from bridge.slack_api.installs.installations import Installations
    from bridge.slack_api.memberships import SlackMemberships
    from bridge.slack_api.workspace_client import WorkspaceClient, WorkspaceOf


class SlackWeb:
    def __init__(self, settings: Settings, db: Database, *,
                 health: DependencyHealth | None = None) -> None:
        self._settings = settings
        self._db = db
        # Told by the async client when Slack fails and when it answers again (/health).
        self._health = health

    @property
    def configured(self) -> bool:
        """One bot token, or installed into many workspaces through Slack's OAuth flow."""
        return self._settings.slack_bot_token is not None or self.installs_wanted

    @property
    def installs_wanted(self) -> bool:
        from bridge.slack_api.installs.installations import installs_wanted

        return installs_wanted(self._settings)

    @cached_property
    def installations(self) -> Installations | None:
        """The installs, when installed into many workspaces (None with a bot token);
        raises ``ConfigurationError`` when SLACK_TOKEN_KEYS cannot be read."""
        from bridge.slack_api.installs.installations import installations_of

        return installations_of(self._settings, self._db) if self.installs_wanted else None

    @cached_property
    def workspace_of(self) -> WorkspaceOf | None:
        """The install each team is served through (for work that starts outside Slack's
        requests); None with a bot token."""
        from bridge.slack_api.installs.authorize import InstalledWorkspaces

        installations = self.installations
        return None if installations is None else InstalledWorkspaces(installations)

    @cached_property
    def client(self) -> WorkspaceClient | None:
        """The async client: the bot token's, or the served workspace's install's; None
        when Slack is not configured."""
        from bridge.slack_api.clients import build_async_web_client

        return (build_async_web_client(self._settings, health=self._health)
                if self.configured else None)

    @cached_property
    def memberships(self) -> SlackMemberships:
        """Which private channels a person is in, as Slack says (kept a minute)."""
        from bridge.slack_api.memberships import SlackMemberships

        return SlackMemberships(self.client, workspace_of=self.workspace_of)

    @cached_property
    def _bot_sync_client(self) -> WebClient:
        """The bot token's sync client, made once: MCP asks for it on every proposal."""
        from bridge.slack_api.clients import build_web_client

        return build_web_client(self._settings)

    def sync_client(self, team: str | None = None) -> WebClient | None:
        """A sync client, for a process with no event loop (the reflection child, `thoth
        mcp` over stdio, doctor): the bot token's, or ``team``'s install's (None when
        Thoth is not installed there)."""
        from bridge.slack_api.clients import build_web_client

        if self._settings.slack_bot_token is not None:
            return self._bot_sync_client
        installations = self.installations
        if installations is None or team is None:
            return None
        install = installations.find(enterprise_id=None, team_id=team)
        return None if install is None else build_web_client(self._settings,
                                                             token=install.bot_token)
