"""What the recall benches on conversation data share: a data set as the CLI's JSONL,
running ``thoth episodes import`` and ``thoth recall --batch`` as subprocesses, R@k,
and a paired bootstrap for the difference two settings make.

A data set module (``locomo_recall.py``, ``realtalk_recall.py``) turns its JSON into a
``Dataset``; ``measure`` imports it into a THOTH_HOME and asks its questions, and
``ask_again`` asks them again in the same home under other settings (RECALL_LEVERS
is read when recalling, except ``sentence_units``, read when remembering).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
KS: tuple[int, ...] = (1, 3, 5, 10)
# Every data set here numbers its categories as LoCoMo does.
CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BOOTSTRAP_RESAMPLES = 2000

# Tolerates the data's malformed forms: "D:11:26" (extra colon), "D30:05" (leading zero)
# and "D17;39" (a semicolon for the colon).
_EVIDENCE_ID = re.compile(r"D:?(\d+)[:;](\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,.\s]+(?=D|$)|[,\s]+")


class BenchError(Exception):
    """A failure that ends the run with a one-line message."""


@dataclass(frozen=True)
class Query:
    id: str
    conversation: str
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


@dataclass
class Dataset:
    """A data set as the CLI takes it: episodes and questions, each conversation a
    private channel of its own."""

    name: str
    episodes: list[dict[str, str]] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    query_lines: list[dict[str, str]] = field(default_factory=list)
    skips: SkipCounts = field(default_factory=SkipCounts)

    def owner(self) -> dict[str, str]:
        """Episode id -> its conversation; BenchError if two turns share an id."""
        owner = {line["id"]: line["channel"] for line in self.episodes}
        if len(owner) != len(self.episodes):
            raise BenchError(f"{self.name}: two turns share one episode id")
        return owner


@dataclass(frozen=True)
class Measured:
    ranked: dict[str, list[str]]  # query id -> episode ids, best first
    import_seconds: float
    recall_seconds: float


# --- data ------------------------------------------------------------------------------


def normalise_evidence(raw: Iterable[str]) -> tuple[list[str], list[str]]:
    """Canonical dialog ids ("D<session>:<turn>") in order, and the tokens that are unreadable.

    One raw string may hold several ids ("D8:6; D9:17", "D13:4. D14:4"). Duplicates are
    dropped so that a repeated id cannot count twice in R@k.
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


def scored_evidence(raw: Sequence[str], turn_ids: set[str], skips: SkipCounts) -> list[str]:
    """The dialog ids of a question's evidence that name turns in the data (every repair
    and drop counted in ``skips``); empty when none is left."""
    if not raw:
        skips.question_without_evidence += 1
        return []
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
    return present


@dataclass(frozen=True)
class Asked:
    """Where and when a conversation's questions are asked, and which are scored."""

    team: str
    conversation: str  # its private channel; its turns' ids are "<conversation>:<dia_id>"
    at: str  # ISO time: just after the conversation
    asker: str
    scored_categories: frozenset[int]


def add_questions(dataset: Dataset, qas: Iterable[Mapping[str, Any]], turn_ids: set[str],
                  asked: Asked) -> None:
    """A conversation's questions with usable evidence added to ``dataset`` (the rest
    counted in its skips); each question's id is "<conversation>#<its index>"."""
    for index, qa in enumerate(qas):
        category = int(qa["category"])
        if category not in asked.scored_categories:
            dataset.skips.not_scored_category += 1
            continue
        present = scored_evidence(qa.get("evidence") or [], turn_ids, dataset.skips)
        if not present:
            continue
        conversation = asked.conversation
        query = Query(id=f"{conversation}#{index}", conversation=conversation,
                      category=category, question=qa["question"],
                      evidence=tuple(f"{conversation}:{dia_id}" for dia_id in present))
        dataset.queries.append(query)
        dataset.query_lines.append({
            "id": query.id, "query": query.question, "at": asked.at, "team": asked.team,
            "channel": conversation, "channel_type": "private", "user": asked.asker})


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


def recalls_at(queries: Sequence[Query], ranked: Mapping[str, Sequence[str]],
               k: int) -> list[float]:
    """Each question's R@k, in the order of ``queries``."""
    return [recall_at_k(query.evidence, ranked[query.id], k) for query in queries]


def paired_bootstrap(base: Sequence[float], other: Sequence[float], *,
                     resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = 0) -> tuple[float, float, float]:
    """The mean of ``other - base`` over the same questions, and its 95% interval from
    resampling the questions with replacement (percentile bootstrap, a fixed seed so a
    rerun prints the same interval)."""
    if len(base) != len(other) or not base:
        raise ValueError("a paired bootstrap needs the same questions, at least one")
    differences = [b - a for a, b in zip(base, other, strict=True)]
    count = len(differences)
    rng = random.Random(seed)
    means = sorted(sum(differences[rng.randrange(count)] for _ in range(count)) / count
                   for _ in range(resamples))
    low = means[int(0.025 * resamples)]
    high = means[min(int(0.975 * resamples), resamples - 1)]
    return sum(differences) / count, low, high


def format_table(queries: Sequence[Query], ranked: Mapping[str, Sequence[str]],
                 categories: Mapping[int, str] = CATEGORY_NAMES) -> list[str]:
    """R@k overall and per category, one line each (categories with no question left out)."""
    per_question = {
        query.id: [recall_at_k(query.evidence, ranked[query.id], k) for k in KS]
        for query in queries
    }
    header = f"{'':<20}{'n':>6}" + "".join(f"{f'R@{k}':>8}" for k in KS)
    groups: list[tuple[str, list[Query]]] = [("overall", list(queries))]
    groups += [
        (f"{category} {name}", [query for query in queries if query.category == category])
        for category, name in categories.items()
    ]
    lines = [header]
    for label, members in groups:
        if not members:
            continue
        means = mean_recalls([per_question[query.id] for query in members])
        lines.append(f"{label:<20}{len(members):>6}" + "".join(f"{m:>8.3f}" for m in means))
    return lines


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
            if owner.get(returned) != query.conversation:
                raise BenchError(
                    f"visibility leak: query {query.id} ({query.conversation}) recalled "
                    f"{returned!r} from {owner.get(returned, 'an unknown conversation')}"
                )


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


def cli_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    # HF_HUB_OFFLINE: the model ships as a package, so a network fetch would be a bug.
    return {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1", **extra}


def measure(dataset: Dataset, work: Path, home: Path,
            extra_env: Mapping[str, str]) -> Measured:
    """Import ``dataset`` into ``home`` (an empty THOTH_HOME) and ask its questions."""
    owner = dataset.owner()
    episodes_path = work / f"{dataset.name}-episodes.jsonl"
    write_jsonl(episodes_path, dataset.episodes)
    _, import_seconds = run_cli(["episodes", "import", str(episodes_path)],
                                cli_env(home, extra_env))
    ranked, recall_seconds = ask_again(dataset, work, home, extra_env)
    check_no_leak(dataset.queries, ranked, owner)
    return Measured(ranked, import_seconds, recall_seconds)


def ask_again(dataset: Dataset, work: Path, home: Path,
              extra_env: Mapping[str, str]) -> tuple[dict[str, list[str]], float]:
    """Ask ``dataset``'s questions of the episodes ``home`` holds already."""
    queries_path = work / f"{dataset.name}-queries.jsonl"
    write_jsonl(queries_path, dataset.query_lines)
    stdout, seconds = run_cli(
        ["recall", "--batch", str(queries_path), "--k", str(max(KS)), "--json"],
        cli_env(home, extra_env))
    ranked = parse_batch_output(stdout)
    check_no_leak(dataset.queries, ranked, dataset.owner())
    return ranked, seconds


@contextmanager
def engine_env(engine: str, work: Path) -> Iterator[Mapping[str, str]]:
    """The environment that puts the CLI on ``engine``: SQLite in THOTH_HOME (nothing),
    or a PostgreSQL started for the run (``tests/postgres.py``) and stopped after."""
    if engine == "sqlite":
        yield {}
        return
    sys.path.insert(0, str(REPO_ROOT))
    from tests.postgres import PostgresForTests

    (work / "postgres").mkdir(exist_ok=True)
    server = PostgresForTests(work / "postgres")
    try:
        yield {"DATABASE_URL": server.fresh_database()}
    finally:
        server.stop()


@dataclass(frozen=True)
class Run:
    """One bench run as its command line asks: where, on what engine, with which levers."""

    engine: str
    levers: str | None
    keep: bool
    home: Path | None = None  # an empty THOTH_HOME of the caller's, never removed


def run_bench(script: str, title: str, baseline: str, load: Callable[[], Dataset],
              run: Run) -> int:
    """Measure the data set ``load`` reads through the CLI and print its table: the
    ``main`` of each data set's script (``script`` names it in errors)."""
    work = Path(tempfile.mkdtemp(prefix=f"thoth-{script}-"))
    home = run.home if run.home is not None else work / "home"
    home.mkdir(parents=True, exist_ok=True)
    levers = {} if run.levers is None else {"RECALL_LEVERS": run.levers}
    try:
        dataset = load()
        with engine_env(run.engine, work) as engine:
            measured = measure(dataset, work, home, {**levers, **engine})
        conversations = ", ".join(sorted({query.conversation for query in dataset.queries}))
        print(f"{title} ({conversations})")
        print()
        print_measured(dataset, measured, baseline)
    except (BenchError, OSError, ValueError, KeyError) as error:
        print(f"{script}: error: {error}", file=sys.stderr)
        return 1
    finally:
        if run.keep:
            print(f"kept: {work} (THOTH_HOME {home})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def print_measured(dataset: Dataset, measured: Measured, baseline: str) -> None:
    print("\n".join(format_table(dataset.queries, measured.ranked)))
    print(baseline)
    print()
    print("\n".join(dataset.skips.lines()))
    print()
    count = len(dataset.queries)
    print(f"episodes imported: {len(dataset.episodes)}")
    print(f"queries:           {count}")
    print(f"import wall time:  {measured.import_seconds:.1f} s")
    print(f"recall wall time:  {measured.recall_seconds:.1f} s "
          f"({1000 * measured.recall_seconds / max(count, 1):.1f} ms/query, including start-up)")
