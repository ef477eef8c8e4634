"""The Slack Web API clients: the settings' base URL, and retries for 429 and 5xx.

``thoth serve`` speaks to Slack only through the async client, on the loops that
already run its turns and its intake: a call that is not awaited is a mypy error
(``unused-coroutine``), so none can stall a loop by running in its thread. The sync
client is for the reflection child, a batch process with no loop to stall.
"""

from __future__ import annotations

import aiohttp
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bridge.settings import Settings
from bridge.slack_api.rate_budget import SharedRateLimitRetryHandler
from bridge.slack_api.workspace_client import WorkspaceClient

WEB_TIMEOUT_S = 30
# What a Slack call can fail with: Slack's refusal, or the network. aiohttp's
# ServerDisconnectedError is not an OSError, hence its own entry.
SLACK_FAILURES = (SlackApiError, OSError, aiohttp.ClientError)


def build_async_web_client(settings: Settings) -> WorkspaceClient:
    """The bot token's client; installed into many workspaces (no SLACK_BOT_TOKEN), the
    served workspace's (``workspace_client.py``)."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    # One rate budget per workspace, whichever client of the process calls.
    return WorkspaceClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=WEB_TIMEOUT_S,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            # Slack's 429 carries Retry-After: the method waits that long for everyone.
            SharedRateLimitRetryHandler(settings.slack_api_url, max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )


def build_web_client(settings: Settings, *, token: str | None = None) -> WebClient:
    """The bot token's sync client, or ``token``'s (one installed workspace's)."""
    if token is None:
        assert settings.slack_bot_token is not None
        token = settings.slack_bot_token.get_secret_value()
    return WebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=WEB_TIMEOUT_S,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitErrorRetryHandler(max_retry_count=3),
            ServerErrorRetryHandler(max_retry_count=2),
        ],
    )
