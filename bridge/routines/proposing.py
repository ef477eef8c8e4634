"""``propose_routine``: the model proposes a routine a person asked for in words, and the
transport shows it back on a card for them to create or cancel.

The tool checks every rule first (``RoutineMaker.proposed``: a refusal is the one line the
model is told), then hands the proposal to the turn's transport (``RoutineAsking``, found
on ``Turn.approvals`` as ``Connecting`` is): in Slack, a card with Create / Cancel only
the asker may press. Nothing is made by the tool itself: the click makes it.

Decided: offered only in a turn whose transport can show the card and that has a speaker
(the terminal cannot: it has `thoth routines` for the operator, and never offers it).
The place is "here" (the channel of the turn's thread: a routine posts new messages
there, not into this thread) or a channel id (``C123``, or Slack's ``<#C123|name>``),
whose kind and name Slack says (``PlaceOf``). The routine's time zone is the speaker's
as Slack gives it (``Turn.zone``), UTC when unknown.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from bridge.pipeline.tools import Answer, Caller, MoreTools, Tool
from bridge.pipeline.tools.arguments import Arguments, said
from bridge.pipeline.turn import Turn
from bridge.routines.making import Proposed, RoutineMaker
from layers.shared.errors import BadInput
from layers.shared.places import Place

log = logging.getLogger(__name__)

PROPOSE_ROUTINE = "propose_routine"
HERE = "here"
# A channel as Slack escapes it in text (<#C123|name>), or its id as a person writes it
# (C0123ABCD, #C0123ABCD: Slack's ids are nine characters or more, so a word is not one).
_ESCAPED = re.compile(r"^<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>$")
_BARE = re.compile(r"^#?([CGD][A-Z0-9]{8,})$")


@runtime_checkable
class RoutineAsking(Protocol):
    async def propose(self, proposed: Proposed, turn: Turn) -> str:
        """Show the proposal to the turn's speaker to create or cancel; what the model is
        told."""
        ...


class PlaceOf(Protocol):
    async def __call__(self, team: str, channel: str) -> Place:
        """The channel as a routine's place (its kind and name); ``BadInput`` when it is
        not one Thoth can post in."""
        ...


def channel_named(text: str) -> str | None:
    """The channel id in ``C123``, ``#C123`` or ``<#C123|name>``; None when it is not one."""
    found = _ESCAPED.match(text.strip()) or _BARE.match(text.strip())
    return found.group(1) if found else None


async def place_for(here: Place, named: str, place_of: PlaceOf) -> Place:
    """Where a routine asked for ``here`` posts: this channel ("here", or its own id), or
    the channel ``named``."""
    channel = HERE if named.strip().lower() in ("", HERE) else channel_named(named)
    if channel is None:
        raise BadInput(f"{said(named)} is not a channel: say here, or a channel id such as"
                       " C0123ABCD")
    if channel in (HERE, here.channel):
        return Place(here.team, here.channel, here.channel_type, None, here.channel_name)
    return await place_of(here.team, channel)


def propose_routine(maker: RoutineMaker, place_of: PlaceOf, turn: Turn,
                    asking: RoutineAsking) -> Tool[Caller]:
    """The tool for this turn: its speaker proposes, its transport asks them."""
    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        if turn.user is None:
            raise BadInput("a routine is made by a person, and this turn has none")
        place = await place_for(turn.place, arguments.text("place", HERE), place_of)
        proposed = await maker.proposed(place, turn.user, turn.user_name,
                                        arguments.text("instruction"), arguments.text("cron"),
                                        turn.zone)
        # The transport's own words (what it showed, and that it waits): read unquoted.
        told = await asking.propose(proposed, turn)
        return Answer(told, told)

    return Tool(PROPOSE_ROUTINE, (
        "Propose a routine: work Thoth does on a schedule (a digest, a reminder, a weekly"
        " look back), when the person asks for something to happen regularly. It is not"
        " made yet: the person is shown a card with the next run times and creates or"
        " cancels it. Write `instruction` as what Thoth is to do each time, as an instruction"
        " to Thoth (\"Post a summary of yesterday's decisions in this channel\"). `cron` is"
        " five fields (minute hour day-of-month month day-of-week) in the person's own time"
        " zone, e.g. \"0 9 * * 1-5\" for 9:00 on weekdays."
    ), {
        "type": "object",
        "properties": {
            "instruction": {"type": "string",
                            "description": "what to do each time, as an instruction to Thoth"},
            "cron": {"type": "string",
                     "description": "five cron fields in the person's time zone"},
            "place": {"type": "string", "default": HERE,
                      "description": "where it posts: here (this channel or DM), or a"
                                     " channel id such as C0123ABCD"},
        },
        "required": ["instruction", "cron"],
    }, handle, step_title="Proposing a routine")


class RoutineTools:
    """The turn's tools found for it (``MoreTools``): ``propose_routine`` where the
    transport can show its card, beside those of ``others`` (the team's MCP servers)."""

    def __init__(self, maker: RoutineMaker, place_of: PlaceOf,
                 others: MoreTools | None = None) -> None:
        self._maker = maker
        self._place_of = place_of
        self.others = others

    async def offered(self, turn: Turn) -> Sequence[Tool[Caller]]:
        found: Sequence[Tool[Caller]] = ()
        if self.others is not None:
            try:
                found = await self.others.offered(turn)
            except Exception:
                # The routine tool is offered even when the team's servers cannot be.
                log.exception("the turn's other tools could not be found")
        asking = turn.approvals
        if turn.user is None or not isinstance(asking, RoutineAsking):
            return found
        return [*found, propose_routine(self._maker, self._place_of, turn, asking)]
