"""HTTP mode: Slack's requests on ``POST /slack/events``, served by uvicorn
(``bridge/web/server.py``).

Bolt ships a starlette adapter whose request/response converters are used here. Bolt's
async app dispatches on uvicorn's own loop, in its own thread: the turns run on another
loop (``runner.py``), so an ack never waits behind a turn.

Every request gets an answer: a bad or stale signature 401 (checked before the body
is read as anything), a body that is not what Slack sends 400, an oversize one 413.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any
from urllib.parse import parse_qsl

from slack_bolt.adapter.starlette.async_handler import (
    AsyncSlackRequestHandler,
    to_async_bolt_request,
    to_starlette_response,
)
from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.request.async_internals import build_async_context
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from bridge.slack_api.workspace_client import serving
from bridge.web.server import Running, WebServer, lifespan_of
from layers.shared.dependency_health import DependencyHealth

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# Slack's own payloads are far smaller; a larger body is refused before it is read.
MAX_BODY_BYTES = 1_000_000
# Slack sends a whole delivery at once; a body still trickling in after this is not Slack.
BODY_TIMEOUT_S = 10.0
# Unix seconds, as Slack sends them (str.isdigit would take "²" or 400 nines).
SLACK_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class MalformedBody(ValueError):
    """A signed body that is not what Slack sends (not a JSON object, a bad form)."""


class BodyTooLarge(ValueError):
    """More than MAX_BODY_BYTES arrived."""


class SlackHttpServer:
    def __init__(
        self, app: AsyncApp, *, signing_secret: str, host: str = "0.0.0.0", port: int = 3000,
        also: tuple[BaseRoute, ...] = (), running: Running | None = None,
        health: DependencyHealth | None = None,
    ) -> None:
        """``also``: more routes on the same port (the console, under /console; MCP);
        ``running``: what runs as long as the server does (MCP's sessions); ``health``:
        what ``/health`` reports."""
        self._dependencies = health or DependencyHealth()
        self._bolt = app
        self._verifier = SignatureVerifier(signing_secret)
        routes = [
            Route(EVENTS_PATH, self._events, methods=["POST"]),
            Route("/health", self._health, methods=["GET"]),
            *also,
        ]
        self._web = WebServer(Starlette(routes=routes, lifespan=lifespan_of(running)),
                              host=host, port=port)

    @property
    def port(self) -> int:
        return self._web.port

    def start(self) -> None:
        """Start serving; returns once the socket listens (raises if it cannot)."""
        self._web.start()

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish, then return."""
        self._web.stop()

    async def _health(self, request: Request) -> Response:
        # 200 even when degraded: the load balancer's check (deploy/compose.yml) drops a
        # replica on any other status, and a replica whose database is away must still
        # ack Slack's deliveries and keep them until it returns.
        return PlainTextResponse(self._dependencies.summary())

    async def _events(self, request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            return PlainTextResponse("payload too large", status_code=413)
        try:
            async with asyncio.timeout(BODY_TIMEOUT_S):
                body = await _read_body(request)
        except BodyTooLarge:
            return PlainTextResponse("payload too large", status_code=413)
        except TimeoutError:
            return PlainTextResponse("the body took too long", status_code=408)
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is left to read it
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            # Slack sends UTF-8 only, and its signature is over that text.
            log.warning("refused a Slack request: the body is not UTF-8")
            return PlainTextResponse("malformed body: not UTF-8", status_code=400)
        if not self._signed(request, text):
            return PlainTextResponse("invalid request signature", status_code=401)
        try:
            parsed = parse_slack_body(text, request.headers.get("content-type"))
        except MalformedBody as error:
            log.warning("refused a signed Slack request: %s", error)
            return PlainTextResponse(f"malformed body: {error}", status_code=400)
        bolt_request = to_async_bolt_request(request, body)
        if bolt_request.body != parsed:
            # Bolt reads any form whose text contains the word "payload" as an interaction
            # (a "/recall payload size" command would be dropped); the body as parsed here
            # is the one Slack meant.
            bolt_request.body = parsed
            bolt_request.context = build_async_context(AsyncBoltContext({}), parsed)
        # The workspace a request is authorized for is served for that request alone
        # (slack_api/installs/authorize.py); a connection's next request starts with none.
        with serving(None):
            response = await self._bolt.async_dispatch(bolt_request)
        return to_starlette_response(response)

    def _signed(self, request: Request, body: str) -> bool:
        timestamp = request.headers.get("x-slack-request-timestamp", "")
        if not SLACK_TIMESTAMP.fullmatch(timestamp):
            # The SDK's check would raise on it (a 500 with a traceback): not Slack's.
            log.warning("refused a Slack request: no numeric X-Slack-Request-Timestamp")
            return False
        return self._verifier.is_valid(
            body=body,
            timestamp=timestamp,
            signature=request.headers.get("x-slack-signature", ""),
        )


def install_routes(app: AsyncApp) -> tuple[BaseRoute, ...]:
    """"Add to Slack" and Slack's redirect back (``slack_api/installs/install_flow.py``), served by
    Bolt's own handler: none with one bot token. Browsers, not Slack, reach these: they
    carry no Slack signature, and Bolt checks the OAuth state instead."""
    flow = app.oauth_flow
    if flow is None:
        return ()
    handler = AsyncSlackRequestHandler(app)

    async def through_bolt(request: Request) -> Response:
        return await handler.handle(request)

    return (Route(flow.install_path, through_bolt, methods=["GET"]),
            Route(flow.redirect_uri_path, through_bolt, methods=["GET"]))


async def _read_body(request: Request) -> bytes:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BodyTooLarge()
    return body


def parse_slack_body(text: str, content_type: str | None) -> dict[str, Any]:
    """The body as Slack sends it: a JSON object (events), or a form (commands), whose
    ``payload`` field, when present, is a JSON object (interactions)."""
    if not text:
        raise MalformedBody("the body is empty")
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "application/json" or text.lstrip().startswith(("{", "[")):
        return _json_object(text)
    form = dict(parse_qsl(text, keep_blank_values=True))
    if not form:
        raise MalformedBody("the form has no fields")
    if "payload" in form:
        return _json_object(form["payload"])
    return form


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedBody(f"not JSON ({error.msg})") from error
    if not isinstance(value, dict):
        raise MalformedBody(f"a JSON {type(value).__name__}, not an object")
    return value
