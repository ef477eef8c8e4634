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

Each turn is said when its session's date says, the turns after it spaced by the
time it takes to write them (``TURN_PACE``): the data gives one time a session, and
turns a second apart would never show a lever that reads time what real gaps are like.

The script converts the data to the CLI's JSONL formats, runs
``python -m bridge episodes import`` and ``python -m bridge recall --batch``
as subprocesses against a fresh THOTH_HOME, checks that no result crosses
conversations, and prints a table with the README's best baseline beside it.

    python bench/locomo_recall.py [--data PATH] [--home DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recall_measure import (
    SHARED_DATA,
    Asked,
    BenchError,
    Dataset,
    Run,
    add_questions,
    normalise_evidence,
    recall_at_k,
    run_bench,
)

__all__ = ["normalise_evidence", "recall_at_k"]  # the helpers' tests reach them here

DEFAULT_DATA = SHARED_DATA / "locomo" / "locomo_dev5.json"

TEAM = "locomo"
SCORED_CATEGORIES = frozenset((1, 2, 3, 4))
BASELINE = ("BM25+MiniLM RRF R@1/3/5/10 .242 / .416 / .484 / .573 "
            "(README baseline, all ten conversations, n = 1,536)")
# The last session ends at an unknown time; a day later is safely "after" it.
NOW_AFTER_LAST_SESSION = timedelta(days=1)
# How long a turn takes to come after the one before: a pause to read and think, then
# its words typed at 40 a minute. LoCoMo's turns average 23 words, so about 45 s
# apart, near REALTALK's real median gap between turns (48 s).
TURN_PAUSE = timedelta(seconds=10)
TURN_PACE_PER_WORD = timedelta(seconds=1.5)

_SESSION_KEY = re.compile(r"session_(\d+)")
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


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime
    turns: list[dict[str, Any]]


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


def said_at(session: Session) -> list[datetime]:
    """When each turn of a session was said: the first at the session's time, each
    next one after a pause and the time its words take to write."""
    moments: list[datetime] = []
    moment = session.started
    for index, turn in enumerate(session.turns):
        if index:
            moment += TURN_PAUSE + TURN_PACE_PER_WORD * len(str(turn["text"]).split())
        moments.append(moment)
    return moments


def episode_lines(sample: Mapping[str, Any]) -> list[dict[str, str]]:
    """One import line per dialog turn of one conversation."""
    sample_id = sample["sample_id"]
    lines: list[dict[str, str]] = []
    for session in sessions_of(sample["conversation"]):
        for turn, created_at in zip(session.turns, said_at(session), strict=True):
            lines.append(
                {
                    "id": f"{sample_id}:{turn['dia_id']}",  # as add_questions names it
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


def add_conversation(dataset: Dataset, sample: Mapping[str, Any]) -> None:
    """One conversation's turns and scored questions added to ``dataset``."""
    sample_id = sample["sample_id"]
    dataset.episodes += episode_lines(sample)
    turn_ids = {turn["dia_id"] for s in sessions_of(sample["conversation"]) for turn in s.turns}
    add_questions(dataset, sample["qa"], turn_ids, Asked(
        TEAM, sample_id, asked_at(sample).isoformat(), sample["conversation"]["speaker_a"],
        SCORED_CATEGORIES))


def load(data_path: Path = DEFAULT_DATA, *, only_held_out: bool = False) -> Dataset:
    samples: list[dict[str, Any]] = json.loads(data_path.read_text(encoding="utf-8"))
    if only_held_out:
        samples = held_out(samples)
    dataset = Dataset("locomo")
    for sample in samples:
        add_conversation(dataset, sample)
    return dataset


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


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_bench("locomo_recall", "LoCoMo episodic recall, categories 1-4", BASELINE,
                     lambda: load(args.data, only_held_out=args.held_out),
                     Run(args.engine, args.levers, args.keep, args.home))


if __name__ == "__main__":
    sys.exit(main())
