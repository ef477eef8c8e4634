"""Slack's OAuth v2 install flow under `thoth serve`: "Add to Slack" at ``INSTALL_PATH``,
Slack's redirect back at ``REDIRECT_PATH``, both Bolt's (``AsyncOAuthFlow``), which sets
the OAuth ``state`` in a cookie as well as in the database (``oauth_states.py``), checks
both when Slack sends the browser back, exchanges the code (``oauth.v2.access``) and
keeps the install (``installations.py``, through ``bolt_stores.py``).

On when ``SLACK_CLIENT_ID``, ``SLACK_CLIENT_SECRET`` and ``SLACK_TOKEN_KEYS`` are set and
``SLACK_BOT_TOKEN`` is not; ``CONSOLE_URL`` is where Slack sends the browser back (the
redirect URL in ``manifest.yml``'s ``oauth_config``). A bot token keeps Thoth in its one
workspace, with no install flow, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.web.async_client import AsyncWebClient

from bridge.settings import Settings
from bridge.slack_api.installs.bolt_stores import InstallationsForBolt, OAuthStatesForBolt
from bridge.slack_api.installs.installations import Installations
from bridge.slack_api.installs.oauth_states import STATE_TTL_S, OAuthStates
from layers.shared.errors import ConfigurationError
from layers.shared.storage.database import Database

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
# manifest.yml's oauth_config.scopes.bot, which a test holds equal to this.
BOT_SCOPES = (
    "app_mentions:read", "assistant:write", "channels:history", "channels:read", "chat:write",
    "commands", "files:read", "groups:history", "groups:read", "im:history", "im:read",
    "mpim:history", "mpim:read", "reactions:read", "reactions:write", "users:read",
)


def missing_for_installs(settings: Settings) -> str | None:
    """What installing through Slack's OAuth flow lacks, said in one line (None: nothing)."""
    missing = [name for name, value in (
        ("SLACK_CLIENT_ID", settings.slack_client_id),
        ("SLACK_CLIENT_SECRET", settings.slack_client_secret),
        ("SLACK_SIGNING_SECRET", settings.slack_signing_secret),
        ("CONSOLE_URL", settings.console_url)) if not value]
    if not missing:
        return None
    return (f"SLACK_TOKEN_KEYS without SLACK_BOT_TOKEN installs Thoth into workspaces through"
            f" Slack's OAuth flow, which needs {', '.join(missing)} too (README, 'Slack')")


def install_flow(settings: Settings, installations: Installations, db: Database, *,
                 on_removed: Callable[[str], Awaitable[object]] | None = None,
                 ) -> AsyncOAuthFlow:
    """Bolt's OAuth flow; ``on_removed``: what else ends when a workspace uninstalls."""
    missing = missing_for_installs(settings)
    if missing is not None:
        raise ConfigurationError(missing)
    assert settings.slack_client_secret is not None and settings.console_url is not None
    api = urlsplit(settings.slack_api_url)
    return AsyncOAuthFlow(
        client=AsyncWebClient(base_url=settings.slack_api_url),
        settings=AsyncOAuthSettings(
            client_id=settings.slack_client_id,
            client_secret=settings.slack_client_secret.get_secret_value(),
            scopes=list(BOT_SCOPES),
            user_scopes=[],
            redirect_uri=settings.console_url.rstrip("/") + REDIRECT_PATH,
            install_path=INSTALL_PATH,
            redirect_uri_path=REDIRECT_PATH,
            # Slack's own authorize page, beside its Web API (a test's loopback Slack).
            authorization_url=f"{api.scheme}://{api.netloc}/oauth/v2/authorize",
            installation_store=InstallationsForBolt(installations, on_removed=on_removed),
            installation_store_bot_only=True,
            state_store=OAuthStatesForBolt(OAuthStates(db)),
            state_expiration_seconds=int(STATE_TTL_S),
        ),
    )
