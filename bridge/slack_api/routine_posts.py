"""A routine's run in Slack (``RunsRoutine``): a turn of its creator's in the routine's
place, answered by the pipeline, and posted there with a line under it saying whose
routine it is.

Decided:
- The turn is the creator's, at the routine's place: recall sees what that person may read
  from there (``viewer_at``: in a channel, never their DMs), the model call counts against
  the daily caps (theirs too), and the turn has no one to ask (``approvals`` None: a tool
  that would ask runs only where the creator allowed it "always"; the model is told it
  did not run, and says so in what it writes).
- Its words tell the model that this is a scheduled run of the creator's routine and
  that no one is waiting to answer: what it writes is posted as it is.
- One session per routine (``routine:<id>``): runs close together share a transcript,
  the idle sweep ends it between runs apart.
- A turn that fails (the cost cap reached, the model away) posts nothing: its one line is
  kept in the run's row and the audit log, where the creator sees it (``/thoth
  routines``, the console), rather than a channel reading about a spending limit.
- A place Slack says Thoth can no longer post in (removed, archived, a deactivated DM
  partner), or a workspace that uninstalled Thoth, pauses the routine (``pause_why``).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.pipeline.reply_sink import CollectedReply
from bridge.pipeline.turn import Turn
from bridge.routines.making import RoutineMaker
from bridge.routines.running import RoutineRunner, RunResult
from bridge.routines.store import CREATOR_DEACTIVATED, Routine
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import Directory, confined_reader
from bridge.slack_api.escaping import escape, escaped_pieces, mention, preview
from bridge.slack_api.workspace_client import WorkspaceOf, serving_team
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place

if TYPE_CHECKING:
    from bridge.pipeline.pipeline import TurnPipeline
    from bridge.slack_api.slack_web import SlackWeb

log = logging.getLogger(__name__)

# How often a process that can post looks for routines that are due (serve and worker).
TICK_EVERY_S = 30.0
# The instruction as the context line under a post shows it.
INSTRUCTION_SHOWN = 120
# A failed run's line, as its row keeps it.
DETAIL_CHARS = 300
# Slack's answers that mean the place is closed to Thoth for good, not for a moment.
GONE = frozenset({"not_in_channel", "channel_not_found", "is_archived", "account_inactive",
                  "cannot_dm_bot", "user_not_found", "user_disabled"})
FRAME = (
    "[A scheduled run of a routine {creator} made ({cron}, {zone}; due {due}). No one is"
    " waiting to answer you and no one can be asked anything: what you write is posted"
    " as it is in {place}, under a line saying it is {creator}'s routine. If something"
    " could not be done, say so in what you write. The routine says:]\n\n{instruction}"
)
CONTEXT_LINE = "Routine by {creator} · {instruction}"


class SlackRoutinePosts:
    """Runs a routine as a turn of its creator's and posts the answer in its place."""

    def __init__(self, pipeline: TurnPipeline, client: AsyncWebClient, *,
                 workspace_of: WorkspaceOf | None = None) -> None:
        """``workspace_of``: installed into many workspaces, the install each routine's
        workspace is served through (None with one bot token)."""
        self._pipeline = pipeline
        self._client = client
        self._workspace_of = workspace_of
        # Who the creators are and what the channels are, cached a while across runs (an
        # hour: a deactivation is heard at once by user_change; this catches one missed).
        self._directory = Directory(client)

    async def __call__(self, routine: Routine, due: datetime) -> RunResult:
        async with serving_team(self._workspace_of, routine.team) as installed:
            if not installed:
                return RunResult(False, "not run: Thoth is no longer installed in its"
                                 " workspace", pause_why="Thoth was removed from its workspace")
            return await self._run(routine, due)

    async def _run(self, routine: Routine, due: datetime) -> RunResult:
        # Checked at each run, not only when it was made: who the creator is now, whether
        # they still may post there, and whether they see only this channel's own memory
        # (a channel shared with another organisation, a guest): never wider than both.
        place = routine.place
        directory = self._directory
        creator = await directory.user(routine.creator)
        if creator.deleted:
            return RunResult(False, "not run: its creator was deactivated",
                             pause_why=CREATOR_DEACTIVATED)
        if place.channel_type in ("private", "mpim") and not await directory.is_member(
                place.channel, routine.creator):
            return RunResult(False, f"not run: its creator is no longer in {named(place)}",
                             pause_why=f"its creator left {named(place)}")
        channel = await directory.channel(place.channel)
        confined = confined_reader(channel, creator, routine.team)
        sink = CollectedReply()
        outcome = await self._pipeline.handle(replace(turn_of(routine, due),
                                                      confined=confined), sink)
        if not outcome.ok:
            return RunResult(False, f"not posted: {one_line(outcome.reply)}")
        try:
            posted = await self._post(routine, escaped_pieces(outcome.reply))
        except SlackApiError as error:
            code = str(error.response.get("error") or "")
            log.warning("routine %s could not post in %s: %s", routine.id, place.channel, code)
            if code in GONE:
                return RunResult(False, f"not posted: Slack refused ({code})",
                                 pause_why=f"Thoth can no longer post in {named(place)}")
            return RunResult(False, f"not posted: Slack refused ({code or 'no reason'})")
        except SLACK_FAILURES as error:
            log.warning("routine %s could not reach Slack: %s", routine.id, error)
            return RunResult(False, "not posted: Slack could not be reached")
        return RunResult(True, f"posted in {named(place)}", posted)

    async def _post(self, routine: Routine, pieces: list[str]) -> str:
        """Each piece of the answer in the routine's place (its thread, if it has one), the
        context line under the last; the first one's ts."""
        pieces = pieces or ["…"]
        first: str | None = None
        for number, piece in enumerate(pieces, start=1):
            blocks: list[dict[str, Any]] = [{"type": "markdown", "text": piece}]
            if number == len(pieces):
                blocks.append(context_block(routine))
            answer = await self._client.chat_postMessage(
                channel=routine.place.channel, thread_ts=routine.place.thread_ts,
                text=preview(piece, 150), blocks=blocks, unfurl_links=False)
            first = first or str(answer.get("ts") or "")
        return first or ""


def routine_runner(pipeline: TurnPipeline, slack: SlackWeb, routines: RoutineMaker | None,
                   audit: AuditLog, *, grace_min: float,
                   owner: str | None = None) -> RoutineRunner | None:
    """The routines this process runs and posts (``thoth serve``, ``thoth worker``): None
    when Slack is not configured (nothing could post them) or routines are off."""
    if routines is None or slack.client is None:
        return None
    posts = SlackRoutinePosts(pipeline, slack.client, workspace_of=slack.workspace_of)
    return RoutineRunner(routines.store, posts, Offloaded(audit), grace_s=grace_min * 60,
                         owner=owner)


def turn_of(routine: Routine, due: datetime) -> Turn:
    """The run as a turn of its creator's at its place, with no one to ask."""
    creator = routine.creator_name or routine.creator
    local = due.astimezone(ZoneInfo(routine.zone)).strftime("%a %Y-%m-%d %H:%M")
    text = FRAME.format(creator=creator, cron=routine.cron, zone=routine.zone, due=local,
                        place=named(routine.place), instruction=routine.instruction)
    return Turn(f"routine:{routine.id}", text, routine.place, user=routine.creator,
                user_name=routine.creator_name, zone=routine.zone, approvals=None)


def context_block(routine: Routine) -> dict[str, Any]:
    """"Routine by @creator · what it does", under the post: the mention is Thoth's own
    markup, the instruction is escaped like any text."""
    line = CONTEXT_LINE.format(creator=mention(routine.creator),
                               instruction=preview(escape(routine.instruction),
                                                   INSTRUCTION_SHOWN))
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": line}]}


def named(place: Place) -> str:
    if place.channel_type == "im":
        return "its creator's DM with Thoth"
    return f"#{place.channel_name}" if place.channel_name else f"channel {place.channel}"


def one_line(text: str) -> str:
    words = " ".join(text.split())
    return words if len(words) <= DETAIL_CHARS else words[: DETAIL_CHARS - 1] + "…"
