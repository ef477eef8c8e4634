"""Routines in Block Kit: the card that proposes one (Create / Cancel), the same card once
answered, and a person's list with Pause / Resume, Run now and Delete per routine.

Times are Slack's date tokens (``<!date^EPOCH^…|fallback>``): each reader sees them in their
own time zone; the fallback, and the words beside them, are the creator's zone, which the
schedule is read in.

Decided: the proposal travels in the Create button's ``value`` (compact JSON, at most
``VALUE_CHARS``), so whichever replica Slack sends the click to can take it with no row
kept for a card that may never be answered; the click is checked again as it is made
(``RoutineMaker.make``). A proposal too long for a value is not shown on a card (the
model is told to shorten it; ``/thoth routine add`` takes the longest).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bridge.routines.described import in_words
from bridge.routines.making import Proposed
from bridge.routines.schedule import Schedule
from bridge.routines.store import Routine
from bridge.slack_api.escaping import escape, mention, preview
from layers.shared.errors import BadInput
from layers.shared.places import Place

CREATE = "routine_create"
CANCEL = "routine_cancel"
PAUSE = "routine_pause"
RESUME = "routine_resume"
RUN_NOW = "routine_run_now"
DELETE = "routine_delete"
# Slack's most for a button's value.
VALUE_CHARS = 2_000
INSTRUCTION_SHOWN = 2_500
# Slack's most blocks in a message; each routine takes two (its words, its buttons).
LISTED = 24


def proposal_value(proposed: Proposed) -> str | None:
    """The proposal as a button carries it; None when it does not fit."""
    place = proposed.place
    value = json.dumps({
        "t": place.team, "c": place.channel, "k": place.channel_type, "n": place.channel_name,
        "u": proposed.creator, "un": proposed.creator_name, "i": proposed.instruction,
        "cr": proposed.schedule.cron, "z": proposed.schedule.zone,
    }, ensure_ascii=False, separators=(",", ":"))
    return value if len(value) <= VALUE_CHARS else None


def proposal_of(value: str) -> Proposed:
    """The proposal a button carried (``BadInput`` when it is not one)."""
    try:
        given = json.loads(value)
        place = Place(str(given["t"]), str(given["c"]), given["k"], None, given.get("n"))
        return Proposed(place, str(given["u"]), given.get("un"), str(given["i"]),
                        Schedule(str(given["cr"]), str(given["z"])))
    except (ValueError, KeyError, TypeError) as error:
        raise BadInput("this card carries no routine") from error


def proposal_card(proposed: Proposed, value: str) -> tuple[str, list[dict[str, Any]]]:
    """The card while it waits for its asker."""
    runs = proposed.next_runs(3)
    shown = ", ".join(when(run, proposed.schedule.zone) for run in runs) or "never"
    blocks = [
        *_what(proposed),
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*Next runs:* {shown}"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": (
            f"Only {mention(proposed.creator)} can create it.")}]},
        {"type": "actions", "block_id": "routine_proposal", "elements": [
            {"type": "button", "action_id": CREATE, "style": "primary", "value": value,
             "text": {"type": "plain_text", "text": "Create"}},
            {"type": "button", "action_id": CANCEL, "value": value,
             "text": {"type": "plain_text", "text": "Cancel"}},
        ]},
    ]
    return (f"Create this routine? {in_words(proposed.schedule.cron)}, posting to"
            f" {place_named(proposed.place)}. {mention(proposed.creator)} decides."), blocks


def answered_card(proposed: Proposed, verdict: str) -> tuple[str, list[dict[str, Any]]]:
    """The card once answered: the proposal, and the verdict where its buttons were."""
    return verdict, [*_what(proposed), {"type": "context", "elements": [
        {"type": "mrkdwn", "text": verdict}]}]


def created(routine: Routine) -> str:
    """Said on the card and to the command once it is made (Slack markdown)."""
    following = (when(datetime.fromtimestamp(routine.next_run_at).astimezone(),
                      routine.zone) if routine.next_run_at is not None else "never")
    return f"Created: routine `{routine.id}`, next run {following}."


def routine_list(routines: Sequence[Routine]) -> tuple[str, list[dict[str, Any]]]:
    """A person's routines with their buttons (the first ``LISTED``)."""
    if not routines:
        return "You have no routines.", []
    blocks: list[dict[str, Any]] = []
    for routine in routines[:LISTED]:
        state = "" if routine.state == "active" else " — *paused*"
        following = ("" if routine.state != "active" or routine.next_run_at is None else
                     ", next " + when(datetime.fromtimestamp(routine.next_run_at).astimezone(),
                                      routine.zone))
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": (
            f"`{routine.id}` {escape(in_words(routine.cron))} ({escape(routine.zone)}),"
            f" posting to {place_named(routine.place)}{following}{state}\n"
            f">{preview(escape(routine.instruction), 300)}")}})
        toggle = (RESUME, "Resume") if routine.state == "paused" else (PAUSE, "Pause")
        blocks.append({"type": "actions", "block_id": f"routine:{routine.id}", "elements": [
            _button(toggle[0], toggle[1], routine.id),
            _button(RUN_NOW, "Run now", routine.id),
            {**_button(DELETE, "Delete", routine.id), "style": "danger"},
        ]})
    more = len(routines) - LISTED
    text = f"Your routines ({len(routines)})" + (f", the first {LISTED} shown" if more > 0
                                                 else "")
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}},
                  *blocks]


def when(moment: datetime, zone: str) -> str:
    """A time each reader sees in their own zone; the fallback is ``zone``'s."""
    local = moment.astimezone(ZoneInfo(zone))
    fallback = f"{local:%a %d %b %Y %H:%M} {zone}"
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


def place_named(place: Place) -> str:
    if place.channel_type == "im":
        return "your DM with Thoth"
    return f"<#{place.channel}>"


def _what(proposed: Proposed) -> list[dict[str, Any]]:
    schedule = proposed.schedule
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"*A routine for {mention(proposed.creator)}*, posting to"
            f" {place_named(proposed.place)}:\n"
            f">{preview(escape(proposed.instruction), INSTRUCTION_SHOWN)}")}},
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            f"*When:* {escape(in_words(schedule.cron))} (`{escape(schedule.cron)}`), in"
            f" {escape(schedule.zone)} time")}},
    ]


def _button(action: str, label: str, value: str) -> dict[str, Any]:
    return {"type": "button", "action_id": action, "value": value,
            "text": {"type": "plain_text", "text": label}}
