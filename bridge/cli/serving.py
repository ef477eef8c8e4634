"""What `thoth serve` runs: the Slack bridge, in Socket Mode (app token) or HTTP mode.

Imported only by `thoth serve` (``serve.py``): Slack's SDKs and the scheduler are not
loaded by the commands that never serve.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable
from datetime import UTC
from typing import Any, TextIO

import aiohttp
from apscheduler.schedulers.background import BackgroundScheduler
from slack_bolt.error import BoltError
from slack_sdk.errors import SlackApiError

from bridge.app import Thoth
from bridge.console.serving import console_mount, sign_in_link
from bridge.console.sign_in import OneTimeLogin
from bridge.slack.bolt_app import SlackTransport, build_bridge, take_over
from bridge.slack.http_server import SlackHttpServer, install_routes
from bridge.slack.runner import TurnRunner
from bridge.slack.socket_mode import SocketModeConnection
from bridge.slack_api.followup_posts import post_due_followups
from bridge.slack_api.installs.install_flow import INSTALL_PATH
from bridge.slack_api.rate_waits_across_replicas import RateWaitsAcrossReplicas
from bridge.slack_api.routine_posts import TICK_EVERY_S
from layers.procedural.brain_peers import FOLLOW_EVERY_S
from layers.shared.errors import BackendUnavailable, ConfigurationError
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 30.0
IDENTITY_WARM_UP_S = 10.0


def serve(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    settings = app.settings
    client = app.slack.client
    if client is None:
        raise ConfigurationError(
            "thoth serve needs SLACK_BOT_TOKEN (one workspace), or SLACK_TOKEN_KEYS to be"
            " installed into workspaces through Slack's OAuth flow (README, 'Slack')")
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        raise ConfigurationError(
            "set SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET for HTTP mode"
        )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    runner = TurnRunner()
    runner.start()
    holds = _rate_waits_across_replicas(app)
    # Slack is asked who the token is first: a wrong token or an unreachable Slack is
    # said in a second, not after the embedding model has loaded.
    bridge = _bridge_or_one_line(app, runner)
    app.warm_up()
    _warm_identity(app, runner, bridge.team)
    scheduler = BackgroundScheduler(timezone=UTC)
    app.housekeeping.schedule(scheduler, runner.wait_for)
    scheduler.add_job(bridge.stores.seen.sweep, "interval", hours=1, id="slack-seen-sweep")
    follower = app.brain_follower()
    if follower is not None:
        scheduler.add_job(follower.step, "interval", seconds=FOLLOW_EVERY_S, id="brain-follow",
                          coalesce=True, max_instances=1)

    def post_followups() -> None:
        runner.wait_for(post_due_followups(Offloaded(bridge.stores.followups), client,
                                           workspace_of=bridge.workspace_of))

    if settings.background_work == "inline":
        scheduler.add_job(
            post_followups, "interval", minutes=1, id="followups", coalesce=True,
            max_instances=1,
        )
    routines = app.routine_runner()
    if routines is not None:
        # Every process that can post looks (the worker too): each run is claimed once.
        scheduler.add_job(lambda: runner.wait_for(routines.tick()), "interval",
                          seconds=TICK_EVERY_S, id="routines", coalesce=True, max_instances=1)
    scheduler.start()
    runner.keep_running(bridge.delivery_order.keep(lambda entry: take_over(bridge, entry)))
    asking = bridge.conversation.tool_asks
    if asking is not None and asking.connect_links is not None:
        runner.keep_running(asking.connect_links.keep_going_on(bridge.conversation.go_on))
    close: Callable[[], object] | None = None
    try:
        close = _connect(bridge.app, app, args, out)
        stop.wait()
    finally:
        log.info("shutting down: finishing turns in flight")
        try:
            if close is not None:
                close()
            scheduler.shutdown(wait=False)
        finally:
            # Whatever failed above, the turns in flight finish and the outbox drains.
            runner.shutdown(SHUTDOWN_TIMEOUT_S, last=_finish(app))
            if holds is not None:
                holds.stop()
    return 0


def _rate_waits_across_replicas(app: Thoth) -> RateWaitsAcrossReplicas | None:
    """Replicas on one PostgreSQL share Slack's waits
    (``slack_api/rate_waits_across_replicas.py``)."""
    url = app.settings.database_url
    if app.db.dialect != "postgresql" or url is None:
        return None
    holds = RateWaitsAcrossReplicas(url.get_secret_value())
    holds.start()
    return holds


def _bridge_or_one_line(app: Thoth, runner: TurnRunner) -> SlackTransport:
    """The bridge, whose start asks Slack who the token is (auth.test)."""
    where = app.settings.slack_api_url or "https://slack.com/api/"
    try:
        return runner.call(build_bridge(app, runner))
    except ConfigurationError:
        runner.shutdown(0)
        raise
    except (BoltError, SlackApiError, OSError, aiohttp.ClientError) as error:
        runner.shutdown(0)
        if isinstance(error, BoltError | SlackApiError):
            raise ConfigurationError(
                f"Slack refused SLACK_BOT_TOKEN ({error}): copy the Bot User OAuth Token"
                " (xoxb-...) from your app's OAuth & Permissions page"
            ) from error
        raise BackendUnavailable(
            f"cannot reach Slack at {where} ({str(error) or type(error).__name__}): check the"
            " network, or SLACK_API_URL if you set it"
        ) from error


def _connect(bolt_app: Any, app: Thoth, args: argparse.Namespace, out: TextIO) -> Any:
    settings = app.settings
    if settings.slack_app_token is not None:
        connection = SocketModeConnection(bolt_app, settings.slack_app_token.get_secret_value())
        connection.start()
        print("Thoth is connected to Slack (Socket Mode); its memory console is"
              " `thoth console` (Socket Mode listens on no port)", file=out, flush=True)
        return connection.stop
    assert settings.slack_signing_secret is not None  # checked by run_serve
    # Imported here: the MCP SDK is not every command's to load.
    from bridge.access.ways_in import ways_in
    from bridge.mcp.http import mcp_over_http
    from bridge.mcp.oauth import MCP_PATH

    # The memory console on the same port, under /console, and MCP at /mcp.
    login = OneTimeLogin()
    mcp_route, mcp_sessions = mcp_over_http(app, host=args.host)
    installing = install_routes(bolt_app)
    server = SlackHttpServer(
        bolt_app,
        signing_secret=settings.slack_signing_secret.get_secret_value(),
        host=args.host,
        port=args.port,
        # "Add to Slack" first: MCP's app is mounted at the root and takes what it is given.
        also=(*installing, console_mount(app, login), mcp_route),
        running=mcp_sessions,
        health=app.health,
    )
    server.start()
    print(f"Thoth listens on http://{args.host}:{server.port}/slack/events", file=out, flush=True)
    if installing:
        print(f"Add Thoth to a workspace: {settings.console_url or ''}{INSTALL_PATH}",
              file=out, flush=True)
    print(f"Its memory console: open {sign_in_link(args.host, server.port, login)}"
          " (signs you in once, as the operator)", file=out, flush=True)
    # Never "token: /thoth": the output's redaction takes what follows "token:" for a secret.
    print(f"MCP for coding agents: http://{args.host}:{server.port}{MCP_PATH}"
          f" ({ways_in(settings)})", file=out, flush=True)
    return server.stop


def _warm_identity(app: Thoth, runner: TurnRunner, team: str | None) -> None:
    """On the turns' own loop, so the first turn finds the connection open."""
    if app.identity is None or team is None:
        return
    try:
        runner.call(app.identity.warm_up(team), IDENTITY_WARM_UP_S)
        if app.identity_ingest is not None:
            # Turns an earlier run could not send (a crash, a restart) go out now.
            runner.call(app.identity_ingest.resume(), IDENTITY_WARM_UP_S)
    except Exception as error:
        log.warning("the identity backend did not warm up (%s); first turns may go"
                    " without a user model", error)


async def _finish(app: Thoth) -> None:
    unsent = await app.drain()
    if unsent:
        log.warning("%d turn(s) not finished at shutdown (identity ingest is kept in its"
                    " outbox for the next start)", unsent)
    await app.pipeline.model.aclose()
