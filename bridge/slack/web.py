"""The Slack Web API client: the settings' base URL, and retries for 429 and 5xx."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bridge.settings import Settings

WEB_TIMEOUT_S = 30


def build_web_client(settings: Settings) -> WebClient:
    assert settings.slack_bot_token is not None
    return WebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=settings.slack_api_url,
        timeout=WEB_TIMEOUT_S,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            # Slack's 429 carries Retry-After; the handler sleeps that long, then retries.
            RateLimitErrorRetryHandler(max_retry_count=3),
            ServerErrorRetryHandler(max_retry_count=2),
        ],
    )
