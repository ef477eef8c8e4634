"""Dates a question names, read as windows of time in the asker's zone."""

from __future__ import annotations

from datetime import UTC, datetime

from layers.episodic.named_dates import windows_named, zone_named

# Thursday 26 November 2026, 10:00 UTC.
NOW = datetime(2026, 11, 26, 10, tzinfo=UTC).timestamp()


def _days(question: str, zone: str | None = None) -> list[tuple[str, str]]:
    """Each window as its first day and the day after it, in the asker's zone."""
    tz = zone_named(zone)
    return [(datetime.fromtimestamp(start, tz).date().isoformat(),
             datetime.fromtimestamp(end, tz).date().isoformat())
            for start, end in windows_named(question, NOW, tz)]


def test_a_day_a_month_and_a_year_in_the_forms_people_write() -> None:
    assert _days("What did we decide on 13 October 2023?") == [("2023-10-13", "2023-10-14")]
    assert _days("What painting was shown on October 13, 2023?") == [
        ("2023-10-13", "2023-10-14")]
    assert _days("who joined on the 3rd of June, 2023") == [("2023-06-03", "2023-06-04")]
    assert _days("What setback came in October 2023?") == [("2023-10-01", "2023-11-01")]
    assert _days("What happened in December 2023") == [("2023-12-01", "2024-01-01")]
    assert _days("How often did we ship in 2023?") == [("2023-01-01", "2024-01-01")]


def test_without_a_year_the_most_recent_one_not_after_now() -> None:
    assert _days("When did we go camping in June?") == [("2026-06-01", "2026-07-01")]
    assert _days("what broke in December?") == [("2025-12-01", "2026-01-01")]
    assert _days("the retro on Dec 3") == [("2025-12-03", "2025-12-04")]
    assert _days("the retro on Nov 20") == [("2026-11-20", "2026-11-21")]


def test_relative_dates_are_read_from_the_moment_of_asking() -> None:
    assert _days("what did I say yesterday") == [("2026-11-25", "2026-11-26")]
    assert _days("who joined last week?") == [("2026-11-16", "2026-11-23")]
    assert _days("what did we do last weekend") == [("2026-11-21", "2026-11-23")]
    # Asked on a Sunday, "last weekend" is the one before this one.
    sunday = datetime(2026, 11, 29, 10, tzinfo=UTC).timestamp()
    (start, _), = windows_named("last weekend", sunday, UTC)
    assert datetime.fromtimestamp(start, UTC).date().isoformat() == "2026-11-21"
    # "last November" asked in November is a year ago; "in November" is this one.
    assert _days("what shipped last November") == [("2025-11-01", "2025-12-01")]
    assert _days("what shipped in November") == [("2026-11-01", "2026-12-01")]
    assert _days("costs last month") == [("2026-10-01", "2026-11-01")]
    assert _days("the plan last year") == [("2025-01-01", "2026-01-01")]


def test_words_that_only_look_like_dates_name_none() -> None:
    assert _days("May I ask what we decided?") == []
    assert _days("we may march on at 10 am") == []
    assert _days("What is the deploy plan?") == []
    assert _days("on 31 February 2023") == []  # no such day


def test_a_day_is_a_day_where_the_asker_is() -> None:
    (start, end), = windows_named("on 13 October 2023", NOW, zone_named("Asia/Tokyo"))
    assert end - start == 86_400
    assert datetime.fromtimestamp(start, UTC).isoformat() == "2023-10-12T15:00:00+00:00"
    assert zone_named("Not/AZone") is UTC and zone_named(None) is UTC
    assert zone_named("America") is UTC and zone_named("x" * 5000) is UTC  # a folder; too long
