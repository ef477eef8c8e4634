"""`thoth serve`: the Slack bridge, in Socket Mode (app token) or HTTP mode (--port)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from datetime import UTC
from typing import Any, TextIO

from apscheduler.schedulers.background import BackgroundScheduler

from bridge.app import Thoth
from bridge.housekeeping import schedule_housekeeping
from bridge.slack.bolt_app import build_bridge
from bridge.slack.followups import post_due_followups
from bridge.slack.http_server import SlackHttpServer
from bridge.slack.runner import TurnRunner
from bridge.slack.seen import SeenDeliveries
from bridge.slack.web import build_web_client
from layers.errors import ConfigurationError

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 30.0
IDENTITY_WARM_UP_S = 10.0


def register(commands: Any) -> None:
    parser = commands.add_parser("serve", help="run the Slack bridge")
    parser.add_argument("--port", type=int, default=3000, help="HTTP mode: port to listen on")
    parser.add_argument("--host", default="0.0.0.0", help="HTTP mode: address to listen on")
    parser.set_defaults(handler=run_serve, runs_turns=True)


def run_serve(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    settings = app.settings
    if settings.slack_bot_token is None:
        raise ConfigurationError("thoth serve needs SLACK_BOT_TOKEN (see README, 'Slack setup')")
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        raise ConfigurationError(
            "set SLACK_APP_TOKEN for Socket Mode, or SLACK_SIGNING_SECRET for HTTP mode"
        )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    app.warm_up()
    runner = TurnRunner()
    runner.start()
    client = build_web_client(settings)
    bridge = build_bridge(app, client, runner)
    _warm_identity(app, runner, bridge.team)
    scheduler = BackgroundScheduler(timezone=UTC)
    schedule_housekeeping(app, scheduler)
    scheduler.add_job(SeenDeliveries(app.db).sweep, "interval", hours=1, id="slack-seen-sweep")
    scheduler.add_job(
        post_due_followups, "interval", args=[app.db, client], minutes=1, id="followups",
        coalesce=True, max_instances=1,
    )
    scheduler.start()
    close = _connect(bridge.app, app, args, out)
    try:
        stop.wait()
    finally:
        log.info("shutting down: finishing turns in flight")
        close()
        scheduler.shutdown(wait=False)
        runner.shutdown(SHUTDOWN_TIMEOUT_S, last=_finish(app))
    return 0


def _connect(bolt_app: Any, app: Thoth, args: argparse.Namespace, out: TextIO) -> Any:
    settings = app.settings
    if settings.slack_app_token is not None:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        handler = SocketModeHandler(bolt_app, settings.slack_app_token.get_secret_value())
        handler.connect()  # type: ignore[no-untyped-call]
        print("Thoth is connected to Slack (Socket Mode)", file=out, flush=True)
        return handler.close
    assert settings.slack_signing_secret is not None  # checked by run_serve
    server = SlackHttpServer(
        bolt_app,
        signing_secret=settings.slack_signing_secret.get_secret_value(),
        host=args.host,
        port=args.port,
    )
    server.start()
    print(f"Thoth listens on http://{args.host}:{server.port}/slack/events", file=out, flush=True)
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
    await app.drain()
    await app.pipeline.model.aclose()
