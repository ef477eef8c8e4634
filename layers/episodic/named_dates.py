"""Dates a question names, as windows of time, matched against when things were said.

"What did we decide on 13 October 2023?", "what broke in June?", "who joined last
week?": a turn said inside the window the question names is preferred. A small rule set,
no model: the forms people write in Slack — a day ("13 October 2023", "October 13,
2023", "Oct 13"), a month ("June", "June 2023"), a year ("in 2023"), and the relative
ones ("yesterday", "last week", "last weekend", "last month", "last year"), read against
the moment of asking in the asker's time zone. A month or day with no year is its most
recent one not after that moment. Anything else names no date, and changes nothing.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr)
                if name})
_MONTHS["sept"] = 9
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"

# Longest forms first: a day with its month and year is not also read as the month alone.
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|:))", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)
_MONTH_ALONE = re.compile(rf"\b(in|during|since|of|last)\s+{_MONTH}\b", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b(?:in|during|of)\s+{_YEAR}\b", re.IGNORECASE)
# Reads one match into its window of days (first, the day after the last), or None.
Reader = Callable[[re.Match[str]], "tuple[date, date] | None"]

_RELATIVE = re.compile(r"\b(yesterday|last\s+(?:week(?:end)?|month|year))\b", re.IGNORECASE)


def windows_named(question: str, now: float, zone: tzinfo) -> list[tuple[float, float]]:
    """The windows of time (start inclusive, end exclusive, seconds since the epoch) the
    question names, read at ``now`` in ``zone``; none when it names no date."""
    today = datetime.fromtimestamp(now, zone).date()
    days: list[tuple[date, date]] = []
    rest = question
    forms: tuple[tuple[re.Pattern[str], Reader], ...] = (
        (_DAY_MONTH_YEAR, lambda m: _day(int(m[3]), m[2], int(m[1]))),
        (_MONTH_DAY_YEAR, lambda m: _day(int(m[3]), m[1], int(m[2]))),
        (_MONTH_YEAR, lambda m: _month(int(m[2]), m[1])),
        (_DAY_MONTH, lambda m: _recent_day(today, m[2], int(m[1]))),
        (_MONTH_DAY, lambda m: _recent_day(today, m[1], int(m[2]))),
        (_MONTH_ALONE, lambda m: _recent_month(today, m[2], before=m[1].lower() == "last")),
        (_YEAR_ALONE, lambda m: (date(int(m[1]), 1, 1), date(int(m[1]) + 1, 1, 1))),
        (_RELATIVE, lambda m: _relative(today, m[1].lower())),
    )
    for pattern, read in forms:
        for match in pattern.finditer(rest):
            window = read(match)
            if window is not None:
                days.append(window)
        rest = pattern.sub(" ", rest)
    return [(_start_of(first, zone), _start_of(after, zone)) for first, after in days]


def _day(year: int, month_name: str, day: int) -> tuple[date, date] | None:
    try:
        first = date(year, _MONTHS[month_name.lower().rstrip(".")], day)
    except (ValueError, KeyError):
        return None
    return first, first + timedelta(days=1)


def _month(year: int, month_name: str) -> tuple[date, date] | None:
    month = _MONTHS.get(month_name.lower().rstrip("."))
    if month is None:
        return None
    first = date(year, month, 1)
    return first, date(year + (month == 12), month % 12 + 1, 1)


def _recent_day(today: date, month_name: str, day: int) -> tuple[date, date] | None:
    this_year = _day(today.year, month_name, day)
    if this_year is not None and this_year[0] <= today:
        return this_year
    return _day(today.year - 1, month_name, day)


def _recent_month(today: date, month_name: str, *, before: bool = False
                  ) -> tuple[date, date] | None:
    """The month's most recent window that has begun (``before``: "last June", which
    asked in June is a year ago)."""
    this_year = _month(today.year, month_name)
    if this_year is not None and this_year[0] <= today and not (
            before and this_year[0] <= today < this_year[1]):
        return this_year
    return _month(today.year - 1, month_name)


def _relative(today: date, said: str) -> tuple[date, date]:
    words = said.split()
    if words[0] == "yesterday":
        return today - timedelta(days=1), today
    unit = words[-1]
    if unit == "weekend":
        # The weekend before this one: asked on a Saturday or Sunday, not this one.
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if today.weekday() >= 5:
            saturday -= timedelta(days=7)
        return saturday, saturday + timedelta(days=2)
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return monday - timedelta(days=7), monday
    if unit == "month":
        first = today.replace(day=1)
        return (first - timedelta(days=1)).replace(day=1), first
    return date(today.year - 1, 1, 1), date(today.year, 1, 1)


def _start_of(day: date, zone: tzinfo) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()


def zone_named(name: str | None) -> tzinfo:
    """The time zone of an IANA name (Slack's ``tz``); UTC for none or one not known."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # Slack's word, not ours to trust: "America" is a folder, a long name too long.
        return UTC
