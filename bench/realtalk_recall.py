"""Episodic recall on REALTALK, measured through Thoth's own CLI.

The data is REALTALK (Lee et al., "REALTALK: A 21-Day Real-World Dataset for Long-Term
Conversation", arXiv 2502.13270; github.com/danny911kr/REALTALK): real people chatting
for 21 days. No licence is stated: evaluation only, none of it ships here. Five of its
ten conversations are in ``shared/data/realtalk/`` (its README gives the shape); the
other five are held back to measure the project and are never fetched.

The measure is LoCoMo's (``locomo_recall.py``): one turn is one episode, said at its
real time (the data's ``date_time``, day first, taken as UTC), each conversation a
private channel and each of its chats (``session_N``) a thread; every question of
categories 1-3 with usable evidence is asked from the conversation's channel just after
its last turn, by its first speaker. R@k is the fraction of the evidence turns in the
top k, averaged over questions. A shared photo joins its turn's words as the dataset's
caption of it, as LoCoMo's does.

    python bench/realtalk_recall.py [--data DIR] [--engine sqlite|postgresql]
                                    [--levers NAMES] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
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
    run_bench,
)

DEFAULT_DATA = SHARED_DATA / "realtalk"
TEAM = "realtalk"
SCORED_CATEGORIES = frozenset((1, 2, 3))
BASELINE = ("BM25+MiniLM RRF R@5/10 .404 / .481 "
            "(README baseline, all ten conversations, n = 705)")
# "Just after the last turn": a minute, so the last turn is not "now" itself.
NOW_AFTER_LAST_TURN = timedelta(minutes=1)
_SESSION_KEY = re.compile(r"session_(\d+)")


def said_at(turn: Mapping[str, Any]) -> datetime:
    """``"29.12.2023, 22:42:04"`` (day first) as an aware datetime; the data gives no
    zone, and UTC keeps every conversation on one clock."""
    return datetime.strptime(turn["date_time"], "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)


def turn_text(turn: Mapping[str, Any]) -> str:
    caption = turn.get("blip_caption")
    if caption:
        return f"{turn['clean_text']} [shared a photo: {caption}]"
    return str(turn["clean_text"])


def chats_of(conversation: Mapping[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each chat's number (its key's, which some turns' ids disagree with) and turns."""
    chats = [(int(match[1]), turns) for key, turns in conversation.items()
             if (match := _SESSION_KEY.fullmatch(key)) and isinstance(turns, list) and turns]
    return sorted(chats, key=lambda chat: chat[0])


def add_conversation(dataset: Dataset, name: str, conversation: Mapping[str, Any]) -> None:
    """One conversation's turns and scored questions added to ``dataset``."""
    chats = chats_of(conversation)
    for number, turns in chats:
        for turn in turns:
            dataset.episodes.append({
                "id": f"{name}:{turn['dia_id']}", "user_text": turn_text(turn),
                "summary": "", "created_at": said_at(turn).isoformat(), "team": TEAM,
                "channel": name, "channel_type": "private", "thread_ts": f"session_{number}",
                "user": turn["speaker"], "user_name": turn["speaker"]})
    turn_ids = {turn["dia_id"] for _, turns in chats for turn in turns}
    at = max(said_at(turn) for _, turns in chats for turn in turns) + NOW_AFTER_LAST_TURN
    add_questions(dataset, conversation["qa"], turn_ids, Asked(
        TEAM, name, at.isoformat(), conversation["name"]["speaker_1"], SCORED_CATEGORIES))


def load(data_dir: Path = DEFAULT_DATA) -> Dataset:
    """Every ``Chat_*.json`` of ``data_dir``, each conversation named by its file."""
    files = sorted(data_dir.glob("Chat_*.json"))
    if not files:
        raise BenchError(f"no Chat_*.json in {data_dir}")
    dataset = Dataset("realtalk")
    for path in files:
        add_conversation(dataset, path.stem, json.loads(path.read_text(encoding="utf-8")))
    return dataset


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Episodic recall R@k on REALTALK via the CLI.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the folder of REALTALK's Chat_*.json files")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary files and print where they are")
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite",
                        help="the store: a SQLite file, or a PostgreSQL started for the run")
    parser.add_argument("--levers", default=None,
                        help="RECALL_LEVERS for the run (layers/episodic/recall_levers.py)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_bench("realtalk_recall", "REALTALK episodic recall, categories 1-3", BASELINE,
                     lambda: load(args.data), Run(args.engine, args.levers, args.keep))


if __name__ == "__main__":
    sys.exit(main())
