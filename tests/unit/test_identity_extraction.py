"""What a person says about themselves becomes observations; nothing else does."""

from __future__ import annotations

import pytest

from layers.identity.ids import MAX_ID_CHARS, honcho_id
from layers.identity.local.extraction import Statement, extract


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("I prefer short answers with links.", ["prefers short answers with links"]),
        ("Actually, I don't like bullet points", ["does not like bullet points"]),
        (
            "My timezone is CET. I'm based in Lisbon!",
            ["their timezone is CET", "is based in Lisbon"],
        ),
        ("Please never page me before 9am", ["asks Thoth to never page them before 9am"]),
        ("Don't use emoji", ["asks Thoth not to use emoji"]),
        ("I can't attend meetings on Fridays", ["cannot attend meetings on Fridays"]),
        ("call me Dee", ["wants to be called Dee"]),
        ("I work on the billing service", ["works on the billing service"]),
        ("I'm a backend engineer on payments", ["is backend engineer on payments"]),
    ],
)
def test_first_person_statements(message: str, expected: list[str]) -> None:
    assert [s.text for s in extract(message)] == expected


@pytest.mark.parametrize(
    "message",
    [
        "Can you tell me what I prefer?",
        "Do I like cats?",
        "If I like it, I'll say so.",
        "Maybe I prefer tea.",
        "I'm sure that works",
        "Sounds like you prefer tea.",
        "Dana prefers long answers.",
        "What's my timezone",
    ],
)
def test_questions_hypotheticals_and_other_people_are_not_facts(message: str) -> None:
    assert extract(message) == []


def test_opposite_statements_share_a_slot() -> None:
    (liked,) = extract("I prefer bullet points")
    (disliked,) = extract("no, I don't like bullet points")
    assert liked.slot == disliked.slot == "pref:points"
    (short,) = extract("I prefer short answers if possible")
    (detailed,) = extract("I prefer detailed answers")
    assert short.text == "prefers short answers" and short.slot == detailed.slot
    assert extract("my timezone is PST")[0].slot == extract("My timezone is CET")[0].slot


def test_repeats_in_one_message_count_once() -> None:
    assert extract("I prefer tea. I prefer tea.") == [Statement("prefers tea", "pref:tea")]


def test_honcho_ids_are_valid_deterministic_and_injective() -> None:
    first, second = honcho_id("T1", "C1:1712.55"), honcho_id("T1", "C1_1712_55")
    assert first != second
    assert first == honcho_id("T1", "C1:1712.55")
    for value in (first, second, honcho_id("x" * 600)):
        assert len(value) <= MAX_ID_CHARS
        assert all(c.isalnum() or c in "_-" for c in value)
    assert honcho_id("a" * 600) != honcho_id("a" * 599 + "b")


@pytest.mark.parametrize(
    "message",
    [
        "I'm out today",
        "I'm seeing a 500 on staging",
        "Don't merge that PR yet",
        "Never mind",
        "I love this, thanks!",
        "> I prefer concise answers",
        "Please call me after lunch about the outage",
        "My manager is out today",
        "I work on weekends sometimes",
        "my password is hunter2",
        "Forget that I live in Berlin",
    ],
)
def test_passing_remarks_commands_quotes_and_secrets_are_not_facts(message: str) -> None:
    assert extract(message) == []


def test_a_request_about_replies_is_kept() -> None:
    assert [s.text for s in extract("Do not use emojis.")] == ["asks Thoth not to use emojis"]
