"""Recall's levers: named by RECALL_LEVERS, names read from a question, a named speaker's
turn preferred."""

from __future__ import annotations

import pytest

from layers.episodic.named_people import first_name, named_in
from layers.episodic.ranking import NAMED_SPEAKER_BOOST, with_named_speakers
from layers.episodic.recall_levers import RecallLevers
from layers.shared.errors import BadInput


def test_levers_are_all_none_or_named_and_an_unknown_one_is_one_clear_line() -> None:
    assert RecallLevers.named("default") == RecallLevers() == RecallLevers.named("")
    assert RecallLevers.named("all") == RecallLevers()  # every lever is on by default
    none = RecallLevers.named("none")
    assert not any(vars(none).values()) and len(vars(none)) == 9
    assert RecallLevers.named(" named_speakers , sentence_units") == RecallLevers(
        **{**dict.fromkeys(vars(none), False), "named_speakers": True, "sentence_units": True})
    with pytest.raises(BadInput, match="no lever 'sentences'; the levers are context_two_turns"):
        RecallLevers.named("named_dates,sentences")


def test_names_are_the_capitalised_words_not_question_words_or_possessives() -> None:
    assert named_in("What did Caroline's sister tell Melanie?") == {"caroline", "melanie"}
    assert named_in("When is the deploy? Where do we meet?") == frozenset()
    assert named_in("did dana say anything") == frozenset()  # written lower: not a name
    assert named_in("What did Élodie tell Łukasz in June, on Monday?") == {"élodie", "łukasz"}
    assert first_name("Dana Scully") == "dana" and first_name(None) is None


def test_a_named_speakers_turn_is_raised_and_no_other() -> None:
    scores = {1: 0.5, 2: 0.5, 3: 0.9}
    speakers = {1: "Dana", 2: "Ari", 3: None}
    raised = with_named_speakers(scores, speakers, frozenset({"dana"}))
    assert raised == {1: 0.5 * (1 + NAMED_SPEAKER_BOOST), 2: 0.5, 3: 0.9}


def test_scaled_from_zero_keeps_a_weak_candidates_share_where_min_max_gives_it_none() -> None:
    from layers.episodic.ranking import min_max, scaled_from_zero

    scored = [(1, 0.8), (2, 0.4), (3, -0.1)]
    assert scaled_from_zero(scored) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert min_max(scored)[2] == pytest.approx(0.5 / 0.9)
    assert scaled_from_zero([(1, 0.0), (2, -0.2)]) == {1: 0.0, 2: 0.0}  # none alike
    assert scaled_from_zero([]) == {}
