"""A schedule in words, for the card and the lists: "at 09:00, Monday to Friday".

Decided: the common shapes (fixed minute and hour; every day, some weekdays, a day of the
month) are said in words; anything else is said as its five fields, which are always shown
beside the words anyway.
"""

from __future__ import annotations

_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
             "Sunday")
_SHORT = {name[:3].lower(): number for number, name in enumerate(_WEEKDAYS[:7])}


def in_words(cron: str) -> str:
    """``cron`` said plainly where it has a common shape, else its fields."""
    fields = cron.split()
    if len(fields) != 5:
        return cron
    minute, hour, day, month, weekday = fields
    if not (minute.isdigit() and month == "*"):
        return f"cron {cron}"
    if hour.isdigit():
        when = f"at {int(hour):02d}:{int(minute):02d}"
    elif hour == "*":
        when = f"at {int(minute)} minutes past every hour"
    else:
        return f"cron {cron}"
    days = _days(day, weekday)
    return f"cron {cron}" if days is None else f"{when}, {days}"


def _days(day: str, weekday: str) -> str | None:
    if day == "*" and weekday == "*":
        return "every day"
    if weekday == "*" and day.isdigit():
        return f"on day {int(day)} of each month"
    if day != "*":
        return None
    named = [_weekday(part) for part in weekday.split(",")]
    if any(part is None for part in named):
        return None
    return "on " + _listed([part for part in named if part is not None])


def _weekday(part: str) -> str | None:
    start, _, end = part.partition("-")
    first, last = _number(start), _number(end) if end else None
    if first is None or (end and last is None):
        return None
    if last is None:
        return _WEEKDAYS[first]
    return f"{_WEEKDAYS[first]} to {_WEEKDAYS[last]}"


def _number(text: str) -> int | None:
    if text.isdigit() and int(text) <= 7:
        return int(text)
    return _SHORT.get(text.lower())


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
