"""Rule-based reflection on a scripted conversation, and lenient report parsing."""

from __future__ import annotations

import pytest

from layers.shared.errors import BadInput
from layers.shared.places import Place
from layers.working.transcript import TranscriptTurn
from reflection.report import parse_report, tool_schema
from reflection.rules import reflect_by_rules
from reflection.session_input import SessionInput


def _turn(user: str, text: str, reply: str = "Noted.", ok: bool = True) -> TranscriptTurn:
    return TranscriptTurn(text, reply, ok, user=user, user_name=user.lower())


SESSION = SessionInput(
    "s1",
    Place("T1", "C1", "public"),
    [
        _turn("U1", "Remember that the release freeze starts on December 15."),
        _turn("U2", "After the review we decided to ship billing behind a canary."),
        _turn("U1", "Should we also freeze the docs site?"),
        _turn("U1", "I prefer short answers. My timezone is CET."),
        _turn(
            "U2",
            "Deploy checklist:\n1. Check the error budget.\n2. Announce in #deploys.\n"
            "3. Run make deploy and watch the dashboards.",
        ),
        _turn("U1", "Thanks", reply="I see you prefer long answers and live in Paris."),
    ],
    feedback=[1],
    existing_skills=["incident-summary"],
    recent_notes=["- 2026-11-01 · the on-call rotation changes on Mondays"],
)


def test_the_notes_a_person_would_expect() -> None:
    report = reflect_by_rules(SESSION)
    assert report.outcome == "success"
    assert report.memory_notes == [
        "the release freeze starts on December 15",
        "Decision: After the review we decided to ship billing behind a canary",
    ]
    assert report.user_model_updates == {"U1": ["prefers short answers", "their timezone is CET"]}
    assert report.should_skill and report.skill_slug == "deploy-checklist"
    assert report.skill_body is not None and "2. Announce in #deploys." in report.skill_body


def test_questions_the_agents_words_and_known_notes_are_left_out() -> None:
    report = reflect_by_rules(SESSION)
    everything = " ".join(report.memory_notes) + str(report.user_model_updates)
    assert "docs site" not in everything
    assert "Paris" not in everything and "long answers" not in everything
    known = SessionInput(
        "s2", Place(), [_turn("U1", "Remember that the on-call rotation changes on Mondays")],
        recent_notes=SESSION.recent_notes,
    )
    assert reflect_by_rules(known).memory_notes == []


def test_failed_turns_and_a_thumbs_down_set_the_outcome() -> None:
    failed = SessionInput("s3", Place(), [_turn("U1", "hi"), _turn("U1", "x", ok=False)])
    assert reflect_by_rules(failed).outcome == "partial"
    disliked = SessionInput("s4", Place(), [_turn("U1", "hi")], feedback=[-1])
    assert reflect_by_rules(disliked).outcome == "failure"


def test_reports_are_parsed_leniently_where_it_is_safe() -> None:
    fenced = '```json\n{"outcome": "success", "memory_notes": null, "should_skill": null}\n```'
    assert parse_report(fenced).memory_notes == [] and not parse_report(fenced).should_skill
    chatty = 'Sure! {"note": 1} Here it is: {"outcome": "partial", "what_worked": "recall"} Bye'
    assert parse_report(chatty).what_worked == "recall"
    for bad in ("no json here", '{"outcome": "great"}', '{"what_worked": "x"}'):
        with pytest.raises(BadInput):
            parse_report(bad)
    assert {"outcome", "memory_notes", "user_model_updates"} <= set(tool_schema()["properties"])


@pytest.mark.parametrize(
    "text",
    [
        "I don't think we decided that yet",
        "Have we decided on Postgres",
        "> we decided to drop IE11",
        "Remember when we broke prod",
        "Remember that the staging DB password is hunter2",
        "Steps I tried, none worked:\n1. restart\n2. clear cache\n3. redeploy",
    ],
)
def test_sentences_that_are_no_notes_or_procedures(text: str) -> None:
    report = reflect_by_rules(SessionInput("s", Place(), [_turn("U1", text)]))
    assert report.memory_notes == [] and not report.should_skill


def test_updates_named_by_display_name_go_to_the_speakers_id() -> None:
    from reflection.report import Reflection
    from reflection.run import _for_speakers

    report = Reflection(
        outcome="success",
        user_model_updates={"u1": ["prefers short answers", "likes tea"],
                            "U2": ["owns billing"], "nobody": ["x"]},
    )
    mapped = _for_speakers(report, SESSION)
    # U1 never spoke of tea: a fact that does not rest on their own words is dropped.
    assert mapped.user_model_updates == {"U1": ["prefers short answers"],
                                         "U2": ["owns billing"]}
    assert "u1 (U1): Remember" in SESSION.transcript_text()


def test_only_a_command_aimed_at_the_follow_up_cancels_it() -> None:
    from bridge.slack_api.followup_posts import CANCEL

    assert CANCEL.search("cancel the follow-up")
    assert CANCEL.search("Please stop the reminder.")
    for text in ("don't forget the follow-up email to the vendor",
                 "stop the cron and check back in 10 min"):
        assert not CANCEL.search(text)


def test_another_persons_words_never_become_someones_identity_fact() -> None:
    from reflection.facts_in_their_own_words import rests_on

    dana = ["Hi, what's the deploy day this week?", "I prefer short answers."]
    assert rests_on("prefers short answers", dana)
    assert not rests_on("is leaving the company next month", dana)  # Eve said it of Dana
    assert not rests_on("[REDACTED:password]", dana)  # nothing but a marker claims nothing
