"""`thoth reflect SESSION_ID`: reflect on one session (the bridge runs it as a subprocess)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.console_links import console_links
from bridge.model.catalogue import CATALOGUE
from bridge.model.output_budget import REPORT_TOKENS, sized_max_tokens
from bridge.model.report_model import LanguageReportModel
from layers.shared.errors import ConfigurationError
from layers.shared.places import LOCAL_TEAM
from reflection.fanout import Writers
from reflection.notify import Notifier, PrintNotifier
from reflection.reflector import ModelReflector, Reflector, RuleReflector
from reflection.run import reflect_session, summary_text


def register(commands: Any) -> None:
    parser = commands.add_parser("reflect", help="reflect on one session (runs once)")
    parser.add_argument("session_id", help="a session id, or a unique start of one")
    parser.add_argument("--summary", action="store_true", help="post the closing summary")
    # Internal: `thoth worker` claimed the run before starting this process.
    parser.add_argument("--claimed", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=run_reflect)


def run_reflect(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    if app.settings.reflection_disabled:
        raise ConfigurationError("reflection is off (REFLECTION_DISABLED=true)")
    session = app.sessions.find(args.session_id)
    args.session_id = session.id  # a unique start of it names it too
    notifier = build_notifier(app, session.place.team, out)
    # The model's client lives on one loop for the run: a cut report is asked again.
    loop = asyncio.new_event_loop()
    try:
        result = reflect_session(
            args.session_id,
            sessions=app.sessions,
            transcript=app.transcript,
            state=app.reflections,
            reflector=build_reflector(app, loop),
            writers=Writers(
                followups=app.followups,
                episodes=app.episodic.store,
                notes=app.notes,
                drafts=app.drafts,
                identity=app.identity,
                notifier=notifier,
                founders=list(app.settings.founder_user_ids),
                tombstones=app.tombstones,
            ),
            existing_skills=sorted(app.skills.skills()),
            claimed=args.claimed,
        )
    finally:
        loop.run_until_complete(app.pipeline.model.aclose())
        loop.close()
    if args.summary:
        cost = app.ledger.spent_in_session(args.session_id)
        notifier.summary(session.place, summary_text(result, cost))
    detail = f": {result.error}" if result.error else ""
    if result.error == "not due":
        row = app.reflections.get(args.session_id)
        if row is not None:
            detail = f" already (attempt {row.attempts}){': ' + row.error if row.error else ''}"
    print(f"reflection {result.state}{detail}", file=sys.stderr)
    return 0 if result.state in ("done", "running") or result.error == "not due" else 1


def build_reflector(app: Thoth, loop: asyncio.AbstractEventLoop) -> Reflector:
    """The turns' model stack (retries, the daily cap, the charge) on ``loop``, asked
    for the reflection model; the rules without a model."""
    settings = app.settings
    if settings.anthropic_api_key is None:
        return RuleReflector()
    model = settings.thoth_reflection_model
    effort = settings.thoth_reflection_effort
    max_tokens = sized_max_tokens(settings.reflection_max_tokens, model, effort, REPORT_TOKENS)
    return ModelReflector(
        LanguageReportModel(app.pipeline.model, model, loop.run_until_complete, effort=effort),
        max_tokens=max_tokens,
        # A cut report is asked once more with twice the room, within what the model takes.
        retry_max_tokens=min(2 * max_tokens, CATALOGUE.capabilities(model).max_output),
    )


def build_notifier(app: Thoth, team: str, out: TextIO) -> Notifier:
    """Slack's cards for a session of Slack, with the bot token, or, installed into many
    workspaces, the token of the session's workspace (none if it uninstalled Thoth)."""
    if team == LOCAL_TEAM:
        return PrintNotifier(out)
    slack = app.slack.sync_client(team)
    if slack is None:
        return PrintNotifier(out)
    from bridge.slack_api.notifier import SlackNotifier

    return SlackNotifier(slack, app.db, console_links(app.settings.console_url),
                         team=None if app.settings.slack_bot_token else team)
