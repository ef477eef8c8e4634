"""The names people call each other by, read from what they say (called_names.py)."""

from __future__ import annotations

import pytest

from layers.episodic.called_names import called_most, introduced_as, said_to


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Haha, totally forgot to introduce myself, I'm Kate. What's your name?", ["kate"]),
        ("My name is Emilia, nice to meet you Kevin.", ["emilia"]),
        ("call me Mel", ["mel"]),
        ("I'm glad you liked it", []),  # not capitalised: not a name
        ("I'm Italian Canadian", []),  # two capitalised words: a description, not a name
        ("I'm Sure it will be fine", []),  # a word that is never a name
    ],
)
def test_an_introduction_names_its_speaker(text: str, names: list[str]) -> None:
    assert introduced_as(text) == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Hey Kate! How was the class?", ["kate"]),
        ("That is so true Kate! Let's catch up tomorrow.", []),  # no "you" or comma before
        ("How are you doing today Kate?", ["kate"]),
        ("What do you think Kate?", []),  # too like "what do you think Paris?"
        ("Thank you so much, Liza!", ["liza"]),
        ("Bella, did you get the tickets?", ["bella"]),
        ("Hello Elise! What have you been doing these days!", ["elise"]),
        ("However, the trip was long.", []),
        ("Absolutely! I loved it.", []),
        ("We flew to Miami. It was great.", []),
        ("Good morning Mel, and thanks Mel!", ["mel"]),
    ],
)
def test_a_name_said_to_someone_is_read(text: str, names: list[str]) -> None:
    assert said_to(text) == names


def test_a_name_means_the_person_most_of_its_namings_point_to() -> None:
    assert called_most({"Emi": 23, "elise": 2}) == "Emi"
    assert called_most({"Emi": 2}) is None  # too few to tell a name from a slip
    assert called_most({"Emi": 5, "elise": 4}) is None  # split: not one person's name
    assert called_most({}) is None
