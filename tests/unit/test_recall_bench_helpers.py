"""The recall benches' pure helpers: evidence repair, dates, R@k, the paired bootstrap,
REALTALK's turns and questions."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load_script(name: str) -> ModuleType:
    # bench/ is not a package, so the script is loaded from its path; it must sit in
    # sys.modules before it runs because dataclasses look their module up there, and
    # bench/ on the path as when it runs (its shared module, recall_measure.py).
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_script("locomo_recall")
realtalk = _load_script("realtalk_recall")
measure = _load_script("recall_measure")


@pytest.mark.parametrize(
    ("raw", "ids", "malformed"),
    [
        (["D1:3"], ["D1:3"], []),
        (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
        (["D:11:26"], ["D11:26"], []),
        (["D30:05"], ["D30:5"], []),
        (["D1:2 D1:4,D2:1"], ["D1:2", "D1:4", "D2:1"], []),
        (["D1:18", "D", "D1:20"], ["D1:18", "D1:20"], ["D"]),
        (["D2:3", "D2:03"], ["D2:3"], []),
        (["D13:4. D14:4"], ["D13:4", "D14:4"], []),
        (["D17;39"], ["D17:39"], []),
        ([""], [], []),
        ([], [], []),
    ],
)
def test_normalise_evidence(raw: list[str], ids: list[str], malformed: list[str]) -> None:
    assert bench.normalise_evidence(raw) == (ids, malformed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:48 am on 1 February, 2023", datetime(2023, 2, 1, 0, 48, tzinfo=UTC)),
        ("12:19 pm on 4 January, 2024", datetime(2024, 1, 4, 12, 19, tzinfo=UTC)),
        ("11:01 AM on 17 December, 2022", datetime(2022, 12, 17, 11, 1, tzinfo=UTC)),
    ],
)
def test_parse_session_datetime(text: str, expected: datetime) -> None:
    assert bench.parse_session_datetime(text) == expected


def test_parse_session_datetime_rejects_other_forms() -> None:
    with pytest.raises(ValueError):
        bench.parse_session_datetime("8 May 2023")


def test_recall_at_k_counts_the_evidence_fraction_in_the_top_k() -> None:
    ranked = ["a", "x", "b", "y"]
    assert bench.recall_at_k(["a", "b"], ranked, 1) == 0.5
    assert bench.recall_at_k(["a", "b"], ranked, 3) == 1.0
    assert bench.recall_at_k(["z"], ranked, 10) == 0.0


def test_held_out_keeps_only_the_conversations_not_in_development(tmp_path: Path) -> None:
    development = tmp_path / "dev.json"
    development.write_text('[{"sample_id": "conv-26"}, {"sample_id": "conv-30"}]')
    samples = [{"sample_id": name} for name in ("conv-26", "conv-44", "conv-30", "conv-47")]

    assert [s["sample_id"] for s in bench.held_out(samples, development)] == [
        "conv-44", "conv-47"]
    with pytest.raises(bench.BenchError, match="development"):
        bench.held_out(samples[:1], development)


def test_the_paired_bootstrap_brackets_the_mean_difference_and_repeats_itself() -> None:
    base = [0.0, 0.5, 1.0, 0.0, 1.0, 0.5, 0.0, 1.0]
    better = [value + 0.25 for value in base]
    mean, low, high = measure.paired_bootstrap(base, better)
    assert mean == pytest.approx(0.25) and low == pytest.approx(0.25) == high  # no spread
    mixed = [1.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    mean, low, high = measure.paired_bootstrap(base, mixed)
    assert low < mean < high and mean == pytest.approx(0.1875)
    assert measure.paired_bootstrap(base, mixed) == (mean, low, high)  # a fixed seed
    with pytest.raises(ValueError):
        measure.paired_bootstrap(base, mixed[:3])


def test_realtalk_turns_keep_their_real_times_and_questions_their_repaired_evidence() -> None:
    turn = {"clean_text": "Here is me a few years back", "speaker": "Emi",
            "date_time": "30.12.2023, 00:53:15", "dia_id": "D1:2",
            "blip_caption": "skier in black jacket"}
    conversation = {
        "name": {"speaker_1": "Emi", "speaker_2": "elise"},
        "session_1": [{"clean_text": "Hey!", "speaker": "elise",
                       "date_time": "29.12.2023, 22:42:04", "dia_id": "D1:1"}, turn],
        # A chat whose turns' ids carry another session's number, as some do.
        "session_2": [{"clean_text": "Morning", "speaker": "Emi",
                       "date_time": "31.12.2023, 09:00:00", "dia_id": "D1:3"}],
        "qa": [{"question": "When did Kate ski?", "evidence": ["D1:2. D1:3"], "category": 2},
               {"question": "What?", "evidence": ["D9:9"], "category": 1},
               {"question": "Why?", "evidence": [], "category": 3}],
    }
    dataset = measure.Dataset("realtalk")
    realtalk.add_conversation(dataset, "Chat_9", conversation)

    assert [line["created_at"] for line in dataset.episodes] == [
        "2023-12-29T22:42:04+00:00", "2023-12-30T00:53:15+00:00", "2023-12-31T09:00:00+00:00"]
    assert dataset.episodes[1]["user_text"] == (
        "Here is me a few years back [shared a photo: skier in black jacket]")
    assert [line["thread_ts"] for line in dataset.episodes] == [
        "session_1", "session_1", "session_2"]
    assert [query.evidence for query in dataset.queries] == [("Chat_9:D1:2", "Chat_9:D1:3")]
    assert dataset.query_lines[0]["at"] == "2023-12-31T09:01:00+00:00"
    assert dataset.query_lines[0]["user"] == "Emi"
    skips = dataset.skips
    assert (skips.evidence_repaired, skips.evidence_missing_turn,
            skips.question_evidence_all_dropped, skips.question_without_evidence) == (1, 1, 1, 1)


def test_locomo_turns_are_spaced_by_the_time_their_words_take() -> None:
    from datetime import timedelta

    session = bench.Session(1, datetime(2023, 5, 8, 13, 56, tzinfo=UTC), [
        {"text": "Hi"}, {"text": "one two three four"}, {"text": "ok"}])
    first, second, third = bench.said_at(session)
    assert first == session.started
    assert second - first == timedelta(seconds=10 + 4 * 1.5)
    assert third - second == timedelta(seconds=10 + 1.5)
