"""The Slack Web API clients: the settings' base URL, and which failures the SDK retries.

``thoth serve`` speaks to Slack only through the async client, on the loops that
already run its turns and its intake: a call that is not awaited is a mypy error
(``unused-coroutine``), so none can stall a loop by running in its thread. The sync
client is for the reflection child, a batch process with no loop to stall.

Decided (issue 55): the SDK sends a call again by itself after a 429 (nothing was done:
Slack refused it), and after a 5xx, a reset connection or a timeout only for methods that
do the same thing however often they are sent (``chat.update``, a status, a read).
A method that makes something each time (``MAKES_SOMETHING``: a post, a stream's start,
append or stop) is not sent again blindly: Slack may have done it before the answer was
lost, and the reply would show twice. Those fail to their caller, which looks in the
thread for the message before sending again (``sure_posts.py``). Only a connection that
never opened is retried for them: then nothing reached Slack.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.error import URLError

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
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bridge.settings import Settings
from bridge.slack_api.makes_something import MAKES_SOMETHING
from bridge.slack_api.rate_budget import SharedRateLimitRetryHandler
from bridge.slack_api.slack_health import SlackHealth
from bridge.slack_api.workspace_client import WorkspaceClient
from layers.shared.dependency_health import DependencyHealth

# What a Slack call can fail with: Slack's refusal, or the network (a timeout is an
# OSError). aiohttp's ServerDisconnectedError is not an OSError, hence its own entry.
SLACK_FAILURES = (SlackApiError, OSError, aiohttp.ClientError)

# The 5xx Slack answers while it is unwell (500 and 503 are the SDK's own list; a load
# balancer in front of it adds 502 and 504).
SERVER_ERRORS = frozenset({500, 502, 503, 504})
SDK_RETRIES = 2


def api_method(request: HttpRequest) -> str:
    """The Slack method a request calls (the last part of its URL)."""
    return request.url.rstrip("/").rsplit("/", 1)[-1]


class SafeServerErrorRetryHandler(AsyncServerErrorRetryHandler):
    """The SDK's retry of a 5xx, for the methods that may be sent twice."""

    async def _can_retry_async(
        self, *, state: RetryState, request: HttpRequest,
        response: HttpResponse | None = None, error: Exception | None = None,
    ) -> bool:
        return (response is not None and response.status_code in SERVER_ERRORS
                and api_method(request) not in MAKES_SOMETHING)


class SafeConnectionErrorRetryHandler(AsyncConnectionErrorRetryHandler):
    """The SDK's retry of a reset, a dropped connection or a timeout, for the methods that
    may be sent twice; for the others only when the connection never opened."""

    def __init__(self, max_retry_count: int) -> None:
        super().__init__(max_retry_count=max_retry_count, error_types=[
            aiohttp.ServerConnectionError, aiohttp.ClientOSError, asyncio.TimeoutError])

    async def _can_retry_async(
        self, *, state: RetryState, request: HttpRequest,
        response: HttpResponse | None = None, error: Exception | None = None,
    ) -> bool:
        if api_method(request) in MAKES_SOMETHING:
            return isinstance(error, aiohttp.ClientConnectorError)
        return await super()._can_retry_async(state=state, request=request,
                                              response=response, error=error)


def build_async_web_client(settings: Settings, *,
                           health: DependencyHealth | None = None) -> WorkspaceClient:
    """The bot token's client; installed into many workspaces (no SLACK_BOT_TOKEN), the
    served workspace's (``workspace_client.py``). ``health`` hears when Slack fails and
    when it answers again."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    # One rate budget per workspace, whichever client of the process calls.
    client = WorkspaceClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=int(max(1, round(settings.slack_timeout_s))),
        retry_handlers=[
            SafeConnectionErrorRetryHandler(max_retry_count=SDK_RETRIES),
            # Slack's 429 carries Retry-After: the method waits that long for everyone.
            SharedRateLimitRetryHandler(settings.slack_api_url, max_retry_count=3),
            SafeServerErrorRetryHandler(max_retry_count=SDK_RETRIES),
        ],
    )
    client.health = None if health is None else SlackHealth(health)
    client.delivery_window_s = settings.slack_delivery_window_s
    return client


class _SyncSafeServerErrorRetryHandler(ServerErrorRetryHandler):
    def _can_retry(self, *, state: RetryState, request: HttpRequest,
                   response: HttpResponse | None = None,
                   error: Exception | None = None) -> bool:
        return (response is not None and response.status_code in SERVER_ERRORS
                and api_method(request) not in MAKES_SOMETHING)


class _SyncSafeConnectionErrorRetryHandler(ConnectionErrorRetryHandler):
    def _can_retry(self, *, state: RetryState, request: HttpRequest,
                   response: HttpResponse | None = None,
                   error: Exception | None = None) -> bool:
        if api_method(request) in MAKES_SOMETHING:
            # Refused before anything was sent: the only failure a post may be retried on.
            return isinstance(error, URLError) and isinstance(error.reason,
                                                              ConnectionRefusedError)
        return bool(super()._can_retry(state=state, request=request, response=response,
                                       error=error))


def build_web_client(settings: Settings, *, token: str | None = None) -> WebClient:
    """The bot token's sync client, or ``token``'s (one installed workspace's)."""
    if token is None:
        assert settings.slack_bot_token is not None
        token = settings.slack_bot_token.get_secret_value()
    handlers: list[Any] = [
        _SyncSafeConnectionErrorRetryHandler(max_retry_count=SDK_RETRIES),
        RateLimitErrorRetryHandler(max_retry_count=3),
        _SyncSafeServerErrorRetryHandler(max_retry_count=SDK_RETRIES),
    ]
    return WebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=int(max(1, round(settings.slack_timeout_s))),
        retry_handlers=handlers,
    )
