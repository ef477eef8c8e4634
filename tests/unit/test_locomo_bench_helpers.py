"""The LoCoMo benchmark's pure helpers: evidence repair, session dates, R@k."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "locomo_recall.py"


def _load_script() -> ModuleType:
    # bench/ is not a package, so the script is loaded from its path; it must sit in
    # sys.modules before it runs because dataclasses look their module up there.
    spec = importlib.util.spec_from_file_location("locomo_recall", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_script()


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
