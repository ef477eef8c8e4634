"""One answer on both engines (issue 54): the same episodes, asked the same questions through
the CLI, give the same top 10 on SQLite (FTS5 BM25, the in-memory vectors) and on
PostgreSQL (tsvector, pgvector), to within ties.

Two real conversations, each a private channel of one store: LoCoMo's conv-30 (a
conversation written by language models; 369 turns, 81 scored questions) and REALTALK's
Chat_1 (written by people: typos, emoji, real timestamps; 476 turns, 70 questions), one turn
an episode, converted by the benches' own code (bench/locomo_recall.py,
bench/realtalk_recall.py). Every scored question is asked: the smallest conversations of
each set keep the test near a minute.

Within ties, precisely: both engines return as many hits; at each rank their scores differ
by at most ``TIE``; and the hits agree as runs of tied scores (consecutive scores within
``TIE`` of the run's first) taken as sets, except a run the 10th place cuts, which k may cut
between different members. ``TIE`` covers what is left between the engines: the CLI prints
scores to six decimals, and a float32 inner product summed in another order (numpy on SQLite,
pgvector on PostgreSQL) moves one by about 1e-7.

The data lives beside the checkout (``../shared/data``, not in this repository): the test is
skipped where it is not.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.postgres import PostgresForTests, count

# bench/ is not a package: its scripts import each other from their folder, as they run.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import locomo_recall  # noqa: E402
import realtalk_recall  # noqa: E402
import recall_measure  # noqa: E402

pytestmark = pytest.mark.model

DATA = recall_measure.SHARED_DATA
LOCOMO = DATA / "locomo" / "locomo_dev5.json"
LOCOMO_CONVERSATION = "conv-30"
REALTALK = DATA / "realtalk" / "Chat_1_Emi_Elise.json"
K = 10
TIE = 1e-5

Ranked = list[tuple[str, float]]


def test_both_engines_give_each_question_the_same_top_ten(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    missing = [str(path) for path in (LOCOMO, REALTALK) if not path.exists()]
    if missing:
        pytest.skip(f"the conversations are not beside the checkout: {', '.join(missing)}"
                    " (../shared/data holds LoCoMo and REALTALK)")
    locomo = next(sample for sample in json.loads(LOCOMO.read_text(encoding="utf-8"))
                  if sample["sample_id"] == LOCOMO_CONVERSATION)
    # Converted as the benches convert them: bench/locomo_recall.py, bench/realtalk_recall.py.
    both = recall_measure.Dataset("both")
    locomo_recall.add_conversation(both, locomo)
    realtalk_recall.add_conversation(both, REALTALK.stem,
                                     json.loads(REALTALK.read_text(encoding="utf-8")))
    episodes, questions = both.episodes, both.query_lines
    recall_measure.write_jsonl(tmp_path / "episodes.jsonl", episodes)
    recall_measure.write_jsonl(tmp_path / "questions.jsonl", questions)

    on_sqlite = _recalled(tmp_path, tmp_path / "sqlite-home", {})
    url = postgres.fresh_database()
    on_postgres = _recalled(tmp_path, tmp_path / "postgresql-home", {"DATABASE_URL": url})

    # Each engine answered from its own store, every question.
    assert count(url, "SELECT count(*) FROM episodes") == len(episodes)
    assert (tmp_path / "sqlite-home" / "thoth.db").exists()
    assert not (tmp_path / "postgresql-home" / "thoth.db").exists()
    asked = {question["id"] for question in questions}
    assert on_sqlite.keys() == asked and on_postgres.keys() == asked
    # Full answers, not empty lists that agree.
    assert sum(len(hits) == K for hits in on_sqlite.values()) >= 0.9 * len(asked)

    differing = {question: _first_difference(on_sqlite[question], on_postgres[question])
                 for question in sorted(asked)
                 if not same_within_ties(on_sqlite[question], on_postgres[question])}
    assert not differing, (
        f"{len(differing)} of {len(asked)} questions differ between SQLite and PostgreSQL:"
        f" {json.dumps(dict(list(differing.items())[:5]), indent=1)}")


def same_within_ties(one: Ranked, other: Ranked, tie: float = TIE, k: int = K) -> bool:
    """Whether two rankings are the same to within ties (the module's docstring)."""
    if len(one) != len(other):
        return False
    if any(abs(a[1] - b[1]) > tie for a, b in zip(one, other, strict=True)):
        return False
    start = 0
    while start < len(one):
        end = start + 1
        while end < len(one) and abs(one[end][1] - one[start][1]) <= tie:
            end += 1
        cut_by_k = end == len(one) == k
        if not cut_by_k and ({hit for hit, _ in one[start:end]}
                             != {hit for hit, _ in other[start:end]}):
            return False
        start = end
    return True


def test_ties_are_runs_of_equal_scores_and_only_the_tenth_place_may_cut_one() -> None:
    ranked = [("a", 0.9), ("b", 0.5), ("c", 0.5)]
    assert same_within_ties(ranked, [("a", 0.9), ("c", 0.5), ("b", 0.5 + TIE / 2)])
    assert not same_within_ties(ranked, [("b", 0.9), ("a", 0.5), ("c", 0.5)])
    assert not same_within_ties(ranked, [("a", 0.9), ("b", 0.5), ("c", 0.4)])
    assert not same_within_ties(ranked, ranked[:2])
    ten = [(f"e{rank}", 1.0 - rank / 10) for rank in range(8)]
    # Three episodes tie for places 9 and 10: which two are shown is k's cut.
    assert same_within_ties([*ten, ("x", 0.1), ("y", 0.1)], [*ten, ("y", 0.1), ("z", 0.1)])
    assert not same_within_ties([*ten, ("x", 0.1)], [*ten, ("z", 0.1)], k=K)


def _recalled(work: Path, home: Path, engine: Mapping[str, str]) -> dict[str, Ranked]:
    """Each question's hits (id, score) from ``thoth episodes import`` then ``thoth recall
    --batch --json``, run as processes on this engine (as the benches run them)."""
    env = recall_measure.cli_env(home, engine)
    recall_measure.run_cli(["episodes", "import", str(work / "episodes.jsonl")], env)
    out, _ = recall_measure.run_cli(
        ["recall", "--batch", str(work / "questions.jsonl"), "--k", str(K), "--json"], env)
    answers = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {str(answer["id"]): [(str(hit["id"]), float(hit["score"]))
                                for hit in answer["results"]] for answer in answers}


def _first_difference(one: Ranked, other: Ranked) -> dict[str, object]:
    for rank, (a, b) in enumerate(zip(one, other, strict=False), start=1):
        if a != b:
            return {"rank": rank, "sqlite": a, "postgresql": b}
    return {"sqlite_hits": len(one), "postgresql_hits": len(other)}

