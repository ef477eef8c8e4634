"""`/thoth routine add "CRON" [#channel] TEXT` and `/thoth routines`, in a DM with Thoth.

`routine add` makes the routine at once (typing the command is its confirmation), with
every rule checked (``RoutineMaker``): it posts in the channel named (as Slack escapes it,
``<#C123|name>``, or a bare id) or, naming none, in the DM it was typed in; its schedule is
read in the person's Slack time zone (UTC when unknown). The answer is one line: the id
and the next run, or what is wrong. `routines` lists the person's own with Pause / Resume,
Run now and Delete buttons (``bridge/slack/routine_cards.py`` takes the clicks).
"""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from bridge import messages
from bridge.commands import CommandServices, Invocation, Reply
from bridge.routines.described import in_words
from bridge.routines.proposing import channel_named, place_for
from bridge.routines.store import Routine, RoutineStore
from bridge.slack_api.routine_cards import routine_list
from layers.shared.errors import BadInput

ORIGIN = "slack /thoth"
# The schedule in straight or typographic double quotes (Slack's clients may curl them).
_QUOTED = re.compile(r'^["\u201c\u201d]([^"\u201c\u201d]*)["\u201c\u201d]\s*(.*)$', re.S)


async def add(invocation: Invocation, services: CommandServices, words: str) -> Reply:
    maker, place_of = services.routines, services.routine_place
    if maker is None or place_of is None:
        return Reply(messages.NO_ROUTINES_HERE, mistake=True)
    try:
        cron, channel, instruction = _parsed(words)
        place = await place_for(invocation.place, channel or "here", place_of)
        proposed = await maker.proposed(place, invocation.user, None, instruction, cron,
                                        invocation.zone)
        routine = await maker.make(proposed, origin=ORIGIN)
    except BadInput as error:
        return Reply(str(error), mistake=True)
    return Reply(messages.ROUTINE_MADE.format(
        id=routine.id, when=in_words(routine.cron), zone=routine.zone,
        where=_where(routine), next=_next(routine)))


async def listed(invocation: Invocation, services: CommandServices) -> Reply:
    maker = services.routines
    if maker is None:
        return Reply(messages.NO_ROUTINES_HERE, mistake=True)
    team, user = invocation.place.team, invocation.user
    routines = await maker.store.run(RoutineStore.of_person, team, user)
    text, blocks = routine_list(routines)
    lines = [text, *(f"{r.id} {r.cron} ({r.zone}) {r.state}: {r.instruction[:80]}"
                     for r in routines)]
    return Reply("\n".join(lines), blocks=blocks)


def _parsed(words: str) -> tuple[str, str | None, str]:
    """The schedule, the channel named (if any) and the instruction."""
    quoted = _QUOTED.match(words.strip())
    if quoted:
        cron, rest = quoted.group(1), quoted.group(2)
    else:
        # Unquoted: its first five words.
        parts = words.split(None, 5)
        if len(parts) < 6:
            raise BadInput(messages.ROUTINE_ADD_USAGE)
        cron, rest = " ".join(parts[:5]), parts[5]
    first, _, after = rest.strip().partition(" ")
    channel = first if channel_named(first) else None
    instruction = after if channel else rest
    if not instruction.strip():
        raise BadInput(messages.ROUTINE_ADD_USAGE)
    return cron, channel, instruction


def _where(routine: Routine) -> str:
    place = routine.place
    if place.channel_type == "im":
        return "this DM"
    return f"#{place.channel_name}" if place.channel_name else place.channel


def _next(routine: Routine) -> str:
    if routine.next_run_at is None:
        return "never"
    local = datetime.fromtimestamp(routine.next_run_at, ZoneInfo(routine.zone))
    return f"{local:%a %d %b %Y %H:%M} {routine.zone}"
