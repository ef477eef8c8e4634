"""Socket Mode: Slack's envelopes over a WebSocket, taken on a loop of their own.

Like uvicorn's loop in HTTP mode, this loop only acks and hands work to the turns'
loop (``runner.py``): an envelope is never acked late because a turn is busy, and
Slack redelivers one that is not acked within three seconds.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bridge.slack_api.clients import SLACK_FAILURES
from layers.shared.errors import BackendUnavailable, ConfigurationError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 10.0


class SocketModeConnection:
    def __init__(self, app: AsyncApp, app_token: str) -> None:
        self._app = app
        self._app_token = app_token
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="thoth-socket-mode", daemon=True
        )
        self.handler: AsyncSocketModeHandler | None = None

    def start(self) -> None:
        """Open the socket (apps.connections.open, then the WebSocket); raises at once if
        Slack refuses the app token (the SDK's client would retry it forever)."""
        self._thread.start()
        connecting = asyncio.run_coroutine_threadsafe(self._connect(), self._loop)
        try:
            connecting.result(CONNECT_TIMEOUT_S)
        except TimeoutError as error:
            connecting.cancel()
            self.stop()
            raise BackendUnavailable(
                f"Socket Mode did not connect within {CONNECT_TIMEOUT_S:.0f} s: check the"
                " network (Slack's WebSocket endpoint, wss-primary.slack.com)"
            ) from error
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Close the socket (envelopes already acked go on as turns), then the loop.
        Never raises: what follows it at shutdown (finishing the turns) must run."""
        try:
            if self.handler is not None:
                closing = self.handler.close_async()  # type: ignore[no-untyped-call]
                asyncio.run_coroutine_threadsafe(closing, self._loop).result(CLOSE_TIMEOUT_S)
        except Exception as error:
            log.warning("the Socket Mode connection did not close cleanly: %r", error)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    def is_connected(self) -> bool:
        if self.handler is None:
            return False
        asking = self.handler.client.is_connected()
        return asyncio.run_coroutine_threadsafe(asking, self._loop).result(CLOSE_TIMEOUT_S)

    async def _connect(self) -> None:
        try:
            # Asked once first: the handler's own connect retries a refused token forever.
            # (The URL this answer holds is left to expire; the handler asks for its own.)
            await self._app.client.apps_connections_open(app_token=self._app_token)
        except SlackApiError as error:
            raise ConfigurationError(
                f"Slack refused SLACK_APP_TOKEN ({error.response.get('error')}): copy the"
                " App-Level Token (xapp-..., scope connections:write) from your app's Basic"
                " Information page"
            ) from error
        except SLACK_FAILURES as error:
            raise BackendUnavailable(
                f"cannot reach Slack to open Socket Mode ({error!r})"
            ) from error
        # Built here: the SDK's socket client takes the loop running when it is made.
        self.handler = AsyncSocketModeHandler(self._app, self._app_token)
        await self.handler.connect_async()  # type: ignore[no-untyped-call]
