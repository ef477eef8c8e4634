"""L1 helpers: the transcript budget and the reply summary."""

from __future__ import annotations

from layers.episodic.summary import summarize_reply
from layers.working.budget import estimate_tokens, trim_to_budget
from layers.working.transcript import TranscriptTurn


def _turn(text: str, ok: bool = True) -> TranscriptTurn:
    return TranscriptTurn(user_text=text, reply_text="reply " + text, ok=ok)


def test_the_newest_turns_that_fit_are_kept_in_order() -> None:
    turns = [_turn(f"turn {i} " + "word " * 50) for i in range(10)]
    per_turn = estimate_tokens(turns[0].user_text) + estimate_tokens(turns[0].reply_text)
    trimmed = trim_to_budget(turns, per_turn * 3 + 1)
    assert [t.user_text.split()[1] for t in trimmed.turns] == ["7", "8", "9"]
    assert trimmed.dropped == 7
    assert trimmed.note is not None and "7 earlier turns" in trimmed.note


def test_failed_turns_are_not_replayed_and_a_full_fit_has_no_note() -> None:
    trimmed = trim_to_budget([_turn("a"), _turn("b", ok=False), _turn("c")], 10_000)
    assert [t.user_text for t in trimmed.turns] == ["a", "c"]
    assert trimmed.dropped == 0 and trimmed.note is None


def test_a_turn_too_big_for_the_budget_is_dropped_whole() -> None:
    trimmed = trim_to_budget([_turn("x" * 10_000)], 100)
    assert trimmed.turns == [] and trimmed.dropped == 1


def test_summary_strips_markdown_and_keeps_whole_sentences() -> None:
    reply = (
        "## Plan\n- **Deploy** the `api` on Friday. See [the runbook](https://x.example/r).\n"
        "```sh\nmake deploy\n```\n" + "Then watch the error rate for an hour. " * 20
    )
    summary = summarize_reply(reply, limit=120)
    assert summary.startswith("Plan Deploy the api on Friday. See the runbook.")
    assert "**" not in summary and "https" not in summary and "make deploy" not in summary
    assert len(summary) <= 120 and summary.endswith(".")


def test_summary_keeps_identifiers_and_cuts_one_long_sentence_at_a_word() -> None:
    assert summarize_reply("Set user_id in the config.") == "Set user_id in the config."
    long = summarize_reply("word " * 200, limit=50)
    assert len(long) <= 50 and long.endswith("…")


def test_one_huge_turn_is_cut_and_earlier_turns_still_fit() -> None:
    turns = [_turn("earlier question"), _turn("pasted log " + "x" * 100_000), _turn("latest")]
    trimmed = trim_to_budget(turns, 6000)
    assert [t.user_text[:10] for t in trimmed.turns] == ["earlier qu", "pasted log", "latest"]
    assert "characters cut" in trimmed.turns[1].user_text
    assert len(trimmed.turns[1].user_text) < 6000


def test_an_empty_reply_is_never_replayed() -> None:
    empty = TranscriptTurn(user_text="q", reply_text="", ok=True)
    assert trim_to_budget([empty, _turn("b")], 1000).turns == [_turn("b")]
