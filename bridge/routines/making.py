"""Making a routine, whoever asks for it (the model's proposal confirmed on its card, the
`/thoth routine add` command): each rule checked first, each refusal one line, and the
creation audited.

Refused: a schedule that is not one or never runs; one more often than
``min_interval_min``; a place its creator cannot post in (``MayPost``: in Slack, a
channel they are a member of, or their own DM with Thoth); past ``max_per_person``
routines of theirs; an empty or overlong instruction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bridge.routines.schedule import Schedule
from bridge.routines.store import Routine, RoutineStore
from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place

INSTRUCTION_CHARS = 2_000


class MayPost(Protocol):
    async def __call__(self, place: Place, user: str) -> bool: ...


@dataclass(frozen=True)
class Proposed:
    """A routine as asked for, before it is made."""

    place: Place
    creator: str
    creator_name: str | None
    instruction: str
    schedule: Schedule

    def next_runs(self, count: int = 3) -> list[datetime]:
        return self.schedule.next_runs(count, after=datetime.now(UTC))


class RoutineMaker:
    def __init__(self, store: Offloaded[RoutineStore], audit: Offloaded[AuditLog],
                 may_post: MayPost, *, min_interval_min: float, max_per_person: int) -> None:
        self.store = store
        self._audit = audit
        self._may_post = may_post
        self._min_interval_min = min_interval_min
        self._max_per_person = max_per_person

    async def proposed(self, place: Place, creator: str, creator_name: str | None,
                       instruction: str, cron: str, zone: str | None) -> Proposed:
        """The routine checked, not yet made; ``BadInput`` saying what is wrong."""
        words = " ".join(instruction.split())
        if not words:
            raise BadInput("say what the routine does: the words it runs each time")
        if len(words) > INSTRUCTION_CHARS:
            raise BadInput(f"a routine's instruction is at most {INSTRUCTION_CHARS:,}"
                           " characters")
        schedule = Schedule.parsed(cron, zone, min_interval_min=self._min_interval_min)
        if not await self._may_post(place, creator):
            raise BadInput(f"you cannot post in {_named(place)}, so a routine of yours cannot"
                           " post there")
        if await self.store.run(lambda s: s.count_of(place.team, creator)) >= (
                self._max_per_person):
            raise BadInput(f"you have {self._max_per_person} routines, the most one person may:"
                           " delete one first (/thoth routines)")
        return Proposed(place, creator, creator_name, words, schedule)

    async def make(self, proposed: Proposed, *, origin: str,
                   made_from: str | None = None) -> Routine:
        """Make it (checked again: a card may be clicked long after it was shown);
        ``made_from``: the card, which makes one routine only."""
        checked = await self.proposed(proposed.place, proposed.creator, proposed.creator_name,
                                      proposed.instruction, proposed.schedule.cron,
                                      proposed.schedule.zone)
        first = checked.schedule.next_run(after=datetime.now(UTC))
        made = await self.store.run(lambda s: s.create(
            checked.place, checked.creator, checked.creator_name, checked.instruction,
            checked.schedule.cron, checked.schedule.zone,
            None if first is None else first.timestamp(), made_from=made_from))
        if made is None:
            raise BadInput("this card made its routine already")
        await self._audit.run(lambda audit: audit.record(
            actor=f"slack:{made.creator}", action="routine.create", target=f"routine:{made.id}",
            origin=origin, detail=(f"in {made.team}, posting to {_named(made.place)},"
                                   f" {made.cron} ({made.zone}): {made.instruction[:200]}")))
        return made


def _named(place: Place) -> str:
    if place.channel_type == "im":
        return "this DM"
    return f"#{place.channel_name}" if place.channel_name else place.channel
