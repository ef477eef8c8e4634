"""Episodic recall on LoCoMo, measured through Thoth's own CLI.

The data is LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational
Memory of LLM Agents", ACL 2024; snap-research/LoCoMo), licensed CC BY-NC 4.0.
We use it for evaluation only and ship none of it; see
``shared/data/locomo/README.md`` for the subset, its known defects and baselines.

The measure (the README's): one dialog turn is one episode. Every question of
categories 1-4 (multi-hop, temporal, open-domain, single-hop) that has usable
evidence becomes a query, asked from the conversation's own private channel at
"now" = one day after the conversation's last session, so only that
conversation's turns are visible. R@k is the fraction of the question's
evidence turns found in the top k results, averaged over questions, for
k = 1, 3, 5, 10. Category 5 (adversarial: the answer is not in the
conversation) has nothing to find and is not scored.

The script converts the data to the CLI's JSONL formats, runs
``python -m bridge episodes import`` and ``python -m bridge recall --batch``
as subprocesses against a fresh THOTH_HOME, checks that no result crosses
conversations, and prints a table with the README's best baseline beside it.

    python bench/locomo_recall.py [--data PATH] [--home DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev5.json"

TEAM = "locomo"
KS: tuple[int, ...] = (1, 3, 5, 10)
CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BASELINE_LABEL = "BM25+MiniLM RRF"
BASELINE_NOTE = "README baseline, all ten conversations, n = 1,536"
BASELINE_RECALLS: tuple[float, ...] = (0.242, 0.416, 0.484, 0.573)
# The last session ends at an unknown time; a day later is safely "after" it.
NOW_AFTER_LAST_SESSION = timedelta(days=1)

_SESSION_KEY = re.compile(r"session_(\d+)")
# Tolerates the README's malformed forms: "D:11:26" (extra colon) and "D30:05" (leading zero).
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_SESSION_DATETIME = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE
)
# Spelled out rather than strptime's %B/%p, which follow the process locale.
_MONTHS: dict[str, int] = {
    name: number
    for number, name in enumerate(
        (
            "january", "february", "march", "april", "may", "june", "july",
            "august", "september", "october", "november", "december",
        ),
        start=1,
    )
}  # fmt: skip


class BenchError(Exception):
    """A failure that ends the run with a one-line message."""


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime
    turns: list[dict[str, Any]]


@dataclass(frozen=True)
class Query:
    id: str
    sample_id: str
    category: int
    question: str
    evidence: tuple[str, ...]  # episode ids


@dataclass
class SkipCounts:
    not_scored_category: int = 0
    evidence_repaired: int = 0
    evidence_malformed: int = 0
    evidence_missing_turn: int = 0
    question_without_evidence: int = 0
    question_evidence_all_dropped: int = 0

    def lines(self) -> list[str]:
        return [
            f"questions not scored (category 5, adversarial): {self.not_scored_category}",
            f"evidence strings repaired (split or reformatted): {self.evidence_repaired}",
            f"evidence tokens dropped, unreadable:              {self.evidence_malformed}",
            f"evidence ids dropped, no such turn:               {self.evidence_missing_turn}",
            f"questions skipped, no evidence in the data:       {self.question_without_evidence}",
            f"questions skipped, all evidence dropped:          "
            f"{self.question_evidence_all_dropped}",
        ]


# --- data conversion -------------------------------------------------------------------


def normalise_evidence(raw: Iterable[str]) -> tuple[list[str], list[str]]:
    """Canonical dialog ids ("D<session>:<turn>") in order, and the tokens that are unreadable.

    One raw string may hold several ids ("D8:6; D9:17", space- or comma-separated).
    Duplicates are dropped so that a repeated id cannot count twice in R@k.
    """
    ids: list[str] = []
    malformed: list[str] = []
    for entry in raw:
        for token in _EVIDENCE_SEPARATORS.split(entry.strip()):
            if not token:
                continue
            match = _EVIDENCE_ID.fullmatch(token)
            if match is None:
                malformed.append(token)
                continue
            canonical = f"D{int(match[1])}:{int(match[2])}"
            if canonical not in ids:
                ids.append(canonical)
    return ids, malformed


def parse_session_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware datetime.

    The dataset gives no time zone; UTC keeps every conversation on one clock.
    """
    match = _SESSION_DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"unrecognised session date_time: {text!r}")
    hour, minute, meridiem, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unrecognised month in session date_time: {text!r}")
    hour_24 = int(hour) % 12 + (12 if meridiem.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)


def sessions_of(conversation: Mapping[str, Any]) -> list[Session]:
    """The sessions that have turns, in order.

    Some conversations carry ``session_N_date_time`` keys with no ``session_N``
    (conv-26 lists dates up to session 35 but turns only up to 19); those are
    not sessions anyone spoke in, so they neither add episodes nor move "now".
    """
    sessions: list[Session] = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not isinstance(turns, list) or not turns:
            continue
        started = parse_session_datetime(conversation[f"{key}_date_time"])
        sessions.append(Session(int(match[1]), started, turns))
    return sorted(sessions, key=lambda session: session.number)


def turn_text(turn: Mapping[str, Any]) -> str:
    # The shared photo is part of what was said (questions ask about it), and the
    # caption is the only form of it the dataset gives, so it joins the turn's text.
    caption = turn.get("blip_caption")
    if caption:
        return f"{turn['text']} [shared a photo: {caption}]"
    return str(turn["text"])


def episode_id(sample_id: str, dia_id: str) -> str:
    return f"{sample_id}:{dia_id}"


def episode_lines(sample: Mapping[str, Any]) -> list[dict[str, str]]:
    """One import line per dialog turn of one conversation."""
    sample_id = sample["sample_id"]
    lines: list[dict[str, str]] = []
    for session in sessions_of(sample["conversation"]):
        for index, turn in enumerate(session.turns):
            # Turns share their session's single timestamp; a second apart keeps their order.
            created_at = session.started + timedelta(seconds=index)
            lines.append(
                {
                    "id": episode_id(sample_id, turn["dia_id"]),
                    "user_text": turn_text(turn),
                    "summary": "",
                    "created_at": created_at.isoformat(),
                    "team": TEAM,
                    "channel": sample_id,
                    "channel_type": "private",
                    "thread_ts": f"session_{session.number}",
                    "user": turn["speaker"],
                    "user_name": turn["speaker"],
                }
            )
    return lines


def asked_at(sample: Mapping[str, Any]) -> datetime:
    last = max(session.started for session in sessions_of(sample["conversation"]))
    return last + NOW_AFTER_LAST_SESSION


def build_queries(sample: Mapping[str, Any], turn_ids: set[str], skips: SkipCounts) -> list[Query]:
    """The scored questions of one conversation; every skip is counted in ``skips``."""
    sample_id = sample["sample_id"]
    queries: list[Query] = []
    for index, qa in enumerate(sample["qa"]):
        category = int(qa["category"])
        if category not in CATEGORY_NAMES:
            skips.not_scored_category += 1
            continue
        raw: list[str] = qa.get("evidence") or []
        if not raw:
            skips.question_without_evidence += 1
            continue
        for entry in raw:
            ids, _ = normalise_evidence([entry])
            if ids and ids != [entry]:
                skips.evidence_repaired += 1
        ids, malformed = normalise_evidence(raw)
        skips.evidence_malformed += len(malformed)
        present = [dia_id for dia_id in ids if dia_id in turn_ids]
        skips.evidence_missing_turn += len(ids) - len(present)
        if not present:
            skips.question_evidence_all_dropped += 1
            continue
        queries.append(
            Query(
                id=f"{sample_id}#{index}",
                sample_id=sample_id,
                category=category,
                question=qa["question"],
                evidence=tuple(episode_id(sample_id, dia_id) for dia_id in present),
            )
        )
    return queries


def query_line(query: Query, at: datetime, speaker_a: str) -> dict[str, str]:
    return {
        "id": query.id,
        "query": query.question,
        "at": at.isoformat(),
        "team": TEAM,
        "channel": query.sample_id,
        "channel_type": "private",
        "user": speaker_a,
    }


def write_jsonl(path: Path, lines: Iterable[Mapping[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


# --- scoring ---------------------------------------------------------------------------


def recall_at_k(evidence: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """Fraction of ``evidence`` among the first ``k`` of ``ranked``."""
    if not evidence:
        raise ValueError("a scored question needs evidence")
    return len(set(evidence) & set(ranked[:k])) / len(set(evidence))


def mean_recalls(rows: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """Column means of per-question recall rows (one column per k)."""
    if not rows:
        return tuple(float("nan") for _ in KS)
    return tuple(sum(column) / len(rows) for column in zip(*rows, strict=True))


def parse_batch_output(stdout: str) -> dict[str, list[str]]:
    """Query id -> ranked episode ids, from ``recall --batch --json`` output."""
    ranked: dict[str, list[str]] = {}
    for number, line in enumerate(stdout.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            ranked[str(record["id"])] = [str(hit["id"]) for hit in record["results"]]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise BenchError(
                f"recall output line {number} is not a result: {line[:200]!r}"
            ) from error
    return ranked


def check_no_leak(
    queries: Sequence[Query], ranked: Mapping[str, Sequence[str]], owner: Mapping[str, str]
) -> None:
    """Every query answered, and only with its own conversation's episodes."""
    for query in queries:
        if query.id not in ranked:
            raise BenchError(f"recall returned no line for query {query.id}")
        for returned in ranked[query.id]:
            if owner.get(returned) != query.sample_id:
                raise BenchError(
                    f"visibility leak: query {query.id} ({query.sample_id}) recalled {returned!r} "
                    f"from {owner.get(returned, 'an unknown conversation')}"
                )


def format_table(queries: Sequence[Query], ranked: Mapping[str, Sequence[str]]) -> list[str]:
    per_question = {
        query.id: [recall_at_k(query.evidence, ranked[query.id], k) for k in KS]
        for query in queries
    }
    header = f"{'':<20}{'n':>6}" + "".join(f"{f'R@{k}':>8}" for k in KS)
    groups: list[tuple[str, list[Query]]] = [("overall", list(queries))]
    groups += [
        (f"{category} {name}", [query for query in queries if query.category == category])
        for category, name in CATEGORY_NAMES.items()
    ]
    lines = [header]
    for label, members in groups:
        means = mean_recalls([per_question[query.id] for query in members])
        lines.append(f"{label:<20}{len(members):>6}" + "".join(f"{m:>8.3f}" for m in means))
    lines.append(
        f"{BASELINE_LABEL:<20}{'':>6}"
        + "".join(f"{m:>8.3f}" for m in BASELINE_RECALLS)
        + f"   ({BASELINE_NOTE})"
    )
    return lines


# --- running the CLI -------------------------------------------------------------------


def run_cli(arguments: Sequence[str], env: Mapping[str, str]) -> tuple[str, float]:
    """Stdout and wall time of ``python -m bridge ARGUMENTS``; BenchError if it fails."""
    command = [sys.executable, "-m", "bridge", *arguments]
    started = time.perf_counter()
    # cwd is the repo so `-m bridge` resolves to this checkout even when not installed.
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=dict(env), capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        stderr = " | ".join(line for line in completed.stderr.strip().splitlines() if line)
        raise BenchError(
            f"`python -m bridge {' '.join(arguments)}` exited {completed.returncode}: "
            f"{stderr or '(no stderr)'}"
        )
    return completed.stdout, elapsed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Episodic recall R@k on LoCoMo via the CLI.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON file")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        # Import refuses ids it already holds, so a reused home fails rather than mixing runs.
        help="an empty THOTH_HOME to use (default: a temporary one)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary files and print where they are"
    )
    parser.add_argument(
        "--engine", choices=("sqlite", "postgresql"), default="sqlite",
        help="the store: the home's SQLite file, or a PostgreSQL started for the run",
    )
    parser.add_argument(
        "--held-out", action="store_true",
        help="--data is LoCoMo's whole data/locomo10.json: measure only the conversations"
             " that are not the development five (the issue's 'unseen conversations')",
    )
    parser.add_argument(
        "--levers", default=None,
        help="RECALL_LEVERS for the run (all, none, or names: layers/episodic/recall_levers.py)",
    )
    return parser.parse_args(argv)


def held_out(samples: list[dict[str, Any]],
             development_data: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The conversations of ``samples`` that are not among the development ones. They stay
    off this repository (CC BY-NC): fetch snap-research/LoCoMo's ``data/locomo10.json``."""
    development = {sample["sample_id"] for sample in
                   json.loads(development_data.read_text(encoding="utf-8"))}
    unseen = [sample for sample in samples if sample["sample_id"] not in development]
    if not unseen:
        raise BenchError(f"every conversation of --data is a development one ({development_data})")
    return unseen


def run(data_path: Path, work: Path, home: Path, extra_env: Mapping[str, str],
        *, only_held_out: bool = False) -> None:
    samples: list[dict[str, Any]] = json.loads(data_path.read_text(encoding="utf-8"))
    if only_held_out:
        samples = held_out(samples)
    skips = SkipCounts()
    episodes: list[dict[str, str]] = []
    queries: list[Query] = []
    query_lines: list[dict[str, str]] = []
    for sample in samples:
        lines = episode_lines(sample)
        episodes += lines
        turn_ids = {turn["dia_id"] for s in sessions_of(sample["conversation"]) for turn in s.turns}
        sample_queries = build_queries(sample, turn_ids, skips)
        queries += sample_queries
        at = asked_at(sample)
        speaker_a = sample["conversation"]["speaker_a"]
        query_lines += [query_line(query, at, speaker_a) for query in sample_queries]
    owner = {line["id"]: line["channel"] for line in episodes}
    if len(owner) != len(episodes):
        raise BenchError("two turns share one episode id; the dataset's dia_ids are not unique")

    episodes_path = work / "episodes.jsonl"
    queries_path = work / "queries.jsonl"
    write_jsonl(episodes_path, episodes)
    write_jsonl(queries_path, query_lines)

    # HF_HUB_OFFLINE: the model ships as a package, so a network fetch would be a bug.
    env = {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1", **extra_env}
    _, import_seconds = run_cli(["episodes", "import", str(episodes_path)], env)
    stdout, recall_seconds = run_cli(
        ["recall", "--batch", str(queries_path), "--k", str(max(KS)), "--json"], env
    )
    ranked = parse_batch_output(stdout)
    check_no_leak(queries, ranked, owner)

    conversations = ", ".join(sample["sample_id"] for sample in samples)
    print(f"LoCoMo episodic recall ({conversations}; categories 1-4)")
    print()
    print("\n".join(format_table(queries, ranked)))
    print()
    print("\n".join(skips.lines()))
    print()
    print(f"episodes imported: {len(episodes)}")
    print(f"queries:           {len(queries)}")
    print(f"import wall time:  {import_seconds:.1f} s")
    print(
        f"recall wall time:  {recall_seconds:.1f} s "
        f"({1000 * recall_seconds / max(len(queries), 1):.1f} ms/query, "
        "including start-up)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="thoth-locomo-"))
    home: Path = args.home if args.home is not None else work / "home"
    home.mkdir(parents=True, exist_ok=True)
    extra_env = {} if args.levers is None else {"RECALL_LEVERS": args.levers}
    try:
        if args.engine == "postgresql":
            sys.path.insert(0, str(REPO_ROOT))
            from tests.postgres import PostgresForTests

            (work / "postgres").mkdir()
            server = PostgresForTests(work / "postgres")
            try:
                run(args.data, work, home, {**extra_env, "DATABASE_URL": server.fresh_database()},
                    only_held_out=args.held_out)
            finally:
                server.stop()
        else:
            run(args.data, work, home, extra_env, only_held_out=args.held_out)
    except (BenchError, OSError, ValueError) as error:
        print(f"locomo_recall: error: {error}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept: {work} (THOTH_HOME {home})", file=sys.stderr)
        else:
            # An explicit --home belongs to the caller and is never removed.
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
