"""When a routine runs: five cron fields (minute, hour, day of month, month, day of week)
read in its creator's time zone, so "0 9 * * 1-5" is 9:00 on their weekdays through
daylight-saving changes.

apscheduler's ``CronTrigger`` computes the times (it keeps the zone's rules). Its day of
week counts from Monday (0), cron's from Sunday (0 or 7): numbers in that field are
turned into day names first, so a schedule means what cron means. A local time a
daylight-saving change skips (01:30 on the spring-forward night) runs at the same instant
in the earlier offset, an hour later on the clock; a time it repeats runs once (the first).
A schedule that names both a day of the month and a day of the week is refused: cron runs
on either, apscheduler only on both, and no one should have to know that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from layers.shared.errors import BadInput

_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
_TICK = timedelta(microseconds=1)
# How many runs ahead a schedule is looked at to find how often it runs.
_LOOK_AHEAD = 60


@dataclass(frozen=True)
class Schedule:
    cron: str
    zone: str

    @classmethod
    def parsed(cls, cron: str, zone: str | None, *, min_interval_min: float) -> Schedule:
        """The schedule, or ``BadInput`` in one line: five fields a cron line takes, a time
        zone that exists, and never more often than every ``min_interval_min`` minutes."""
        fields = cron.split()
        if len(fields) != 5:
            raise BadInput(f"{cron!r} is not a schedule: five fields, minute hour day month"
                           ' weekday, as in "0 9 * * 1-5" (9:00 on weekdays)')
        if fields[2] != "*" and fields[4] != "*":
            raise BadInput(f"{cron!r} names both a day of the month and a day of the week:"
                           " give one of them, the other *")
        schedule = cls(" ".join(fields), zone or "UTC")
        try:
            ZoneInfo(schedule.zone)
        except (ZoneInfoNotFoundError, ValueError) as error:
            raise BadInput(f"{zone!r} is not a time zone") from error
        runs = schedule.next_runs(_LOOK_AHEAD, after=datetime.now(UTC))
        if not runs:
            raise BadInput(f"{cron!r} never runs")
        shortest = min((later - earlier for earlier, later in zip(runs, runs[1:], strict=False)),
                       default=timedelta.max)
        if shortest < timedelta(minutes=min_interval_min):
            raise BadInput(f"{cron!r} runs every {_minutes(shortest)}: a routine runs at most"
                           f" every {min_interval_min:g} minutes")
        return schedule

    def next_runs(self, count: int, *, after: datetime) -> list[datetime]:
        """The next ``count`` run times strictly after ``after``, in UTC."""
        trigger = self._trigger()
        zone = ZoneInfo(self.zone)
        last_wall = _wall(after, zone)
        runs: list[datetime] = []
        previous: datetime | None = None
        # The trigger answers the first time at or after the moment (whole seconds up).
        moment = after + _TICK
        while len(runs) < count:
            found = trigger.get_next_fire_time(previous, moment)
            if found is None:
                break
            at = found.astimezone(UTC)
            if at <= after or _wall(at, zone) <= last_wall:
                # The hour a fall-back change repeats (the wall clock goes back): that time
                # ran once already, or apscheduler answered an instant again; look past it.
                previous, moment = None, max(moment, at) + timedelta(minutes=1)
                continue
            runs.append(at)
            last_wall = _wall(at, zone)
            previous, moment = found, found + _TICK
        return runs

    def next_run(self, after: datetime) -> datetime | None:
        runs = self.next_runs(1, after=after)
        return runs[0] if runs else None

    def _trigger(self) -> CronTrigger:
        minute, hour, day, month, weekday = self.cron.split()
        try:
            return CronTrigger(minute=minute, hour=hour, day=day, month=month,
                               day_of_week=_named_days(weekday), timezone=ZoneInfo(self.zone))
        except ValueError as error:
            raise BadInput(f"{self.cron!r} is not a schedule ({error})") from error


def _wall(moment: datetime, zone: ZoneInfo) -> datetime:
    """The clock on the wall in ``zone`` at ``moment`` (01:30 twice on a fall-back night)."""
    return moment.astimezone(zone).replace(tzinfo=None)


def _named_days(field: str) -> str:
    """Cron's numbered weekdays (0 and 7 Sunday) as names, which mean one thing to both."""
    if "/" in field and not field.startswith("*"):
        raise BadInput(f"{field!r}: a step in the weekday field is taken only after *")

    def named(match: re.Match[str]) -> str:
        number = int(match.group(0))
        if number > 7:
            raise BadInput(f"{number} is not a weekday (0 to 7, or sun to sat)")
        return _DAYS[number]

    if field.startswith("*"):
        return field
    return re.sub(r"\d+", named, field)


def _minutes(span: timedelta) -> str:
    minutes = span.total_seconds() / 60
    return f"{minutes:g} minute{'s' if minutes != 1 else ''}"
