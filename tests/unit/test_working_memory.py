"""L1 helpers: the transcript budget and the reply summary."""

from __future__ import annotations

from layers.episodic.summary import summarize_reply
from layers.working.budget import estimate_tokens, trim_to_budget
from layers.working.transcript import TranscriptTurn


def _turn(text: str, ok: bool = True) -> TranscriptTurn:
    return TranscriptTurn(user_text=text, reply_text="reply " + text, ok=ok)


def test_the_newest_turns_that_fit_are_kept_in_order_and_dropped_in_blocks() -> None:
    turns = [_turn(f"turn {i} " + "word " * 50) for i in range(10)]
    per_turn = estimate_tokens(turns[0].user_text) + estimate_tokens(turns[0].reply_text)
    budget = per_turn * 4 + 1
    kept = [trim_to_budget(turns[: n + 1], budget) for n in range(10)]
    # Four fit; the fifth drops the oldest down to half the budget (two turns), and the
    # start then stays put until the kept turns pass the budget again.
    assert [k.dropped for k in kept] == [0, 0, 0, 0, 3, 3, 3, 6, 6, 6]
    last = kept[-1]
    assert [t.user_text.split()[1] for t in last.turns] == ["6", "7", "8", "9"]
    assert last.note is not None and "6 earlier turns" in last.note
    assert all(len(k.turns) * per_turn <= budget for k in kept)


def test_the_start_of_a_long_conversation_moves_rarely() -> None:
    turns = [_turn(f"turn {i} " + "word " * (20 + 13 * i % 40)) for i in range(200)]
    starts = [trim_to_budget(turns[: n + 1], 6000).dropped for n in range(200)]
    moves = sum(1 for before, after in zip(starts, starts[1:], strict=False) if after != before)
    assert starts == sorted(starts) and starts[-1] > 150  # the old ones do go
    assert moves <= 200 // 10  # one turn at a time would move it about 170 times


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


def test_the_newest_turn_is_kept_when_older_ones_are_dropped_in_a_block() -> None:
    long_turns = [_turn(f"log {i} " + "x" * 7_000) for i in range(2)]
    trimmed = trim_to_budget(long_turns, 6_000)
    assert [t.user_text.split()[1] for t in trimmed.turns] == ["1"] and trimmed.dropped == 1

