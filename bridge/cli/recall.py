"""`thoth recall`: search episodes as a given viewer, one query or a batch file."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.episodic.episode import Hit
from layers.episodic.jsonl import LineError, episode_record, read_json_lines
from layers.episodic.memory import RecallQuery
from layers.shared.errors import BadInput
from layers.shared.places import (
    CHANNEL_TYPES,
    LOCAL_CHANNEL,
    LOCAL_TEAM,
    TERMINAL_CHANNEL,
    ChannelType,
    Viewer,
)

PREVIEW_CHARS = 120


def register(commands: Any) -> None:
    parser = commands.add_parser("recall", help="search episodes")
    parser.add_argument("query", nargs="?", help="what to search for")
    parser.add_argument("--k", type=_positive_int, default=None, help="how many results")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--batch", type=Path, help="JSON-lines file of queries")
    parser.add_argument("--at", type=_iso_time, help="ISO-8601 'now' used for recency")
    parser.add_argument("--team", default=LOCAL_TEAM, help="the asker's workspace")
    parser.add_argument("--user", help="the asker (default: you, as in thoth chat)")
    parser.add_argument("--channel", help="the channel asked from (default: your thoth chat)")
    parser.add_argument("--channel-type", choices=CHANNEL_TYPES,
                        help="with --channel: its type (im, public, private, mpim)")
    parser.add_argument("--all", action="store_true",
                        help="the operator's view: everything stored, in every place")
    parser.set_defaults(handler=run_recall)


class BatchQuery(BaseModel):
    """One line of a ``--batch`` file."""

    model_config = ConfigDict(extra="ignore")

    id: str | int
    query: str
    at: datetime | None = None
    team: str = LOCAL_TEAM
    user: str | None = None
    channel: str = LOCAL_CHANNEL
    channel_type: ChannelType = "public"

    def to_recall_query(self) -> RecallQuery:
        viewer = Viewer(self.team, self.channel, self.channel_type, self.user)
        return RecallQuery(self.query, viewer, _epoch(self.at) if self.at else None)


def run_recall(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    k = args.k or app.settings.recall_top_k
    if args.batch is not None:
        if args.query is not None:
            raise BadInput("give either a QUERY or --batch FILE, not both")
        return _run_batch(args.batch, k, app, out)
    if args.query is None or not args.query.strip():
        raise BadInput("the query is empty: thoth recall 'what to search for'")
    viewer = _viewer(args)
    now = _epoch(args.at) if args.at else None
    hits = app.episodic.recall(args.query, viewer, k=k, now=now)
    if args.json:
        print(json.dumps([_hit_json(hit) for hit in hits], ensure_ascii=False), file=out)
    elif not hits:
        print(_nothing_matched(app, args.query, viewer, k, now), file=out)
    else:
        for rank, hit in enumerate(hits, start=1):
            print(_hit_line(rank, hit), file=out)
    return 0


def _run_batch(path: Path, k: int, app: Thoth, out: TextIO) -> int:
    ids: list[str | int] = []
    queries: list[RecallQuery] = []
    for number, value in read_json_lines(path):
        if isinstance(value, LineError):
            raise BadInput(f"{path}: {value}")
        try:
            line = BatchQuery.model_validate(value)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "line"
            raise BadInput(f"{path}: line {number}: {where}: {first['msg']}") from error
        if not line.query.strip():
            raise BadInput(f"{path}: line {number}: the query is empty")
        ids.append(line.id)
        queries.append(line.to_recall_query())
    if not queries:
        raise BadInput(f"{path} holds no query: one JSON object per line, with an id and a query")
    results = app.episodic.recall_many(queries, k=k)
    for query_id, hits in zip(ids, results, strict=True):
        record = {
            "id": query_id,
            "results": [{"id": h.episode.id, "score": round(h.score, 6)} for h in hits],
        }
        print(json.dumps(record, ensure_ascii=False), file=out)
    return 0


def _viewer(args: argparse.Namespace) -> Viewer:
    """By default the person at this terminal, where `thoth chat` puts them (a DM of the
    local workspace), so recall finds what they told chat, and everything public.

    Decided: the owner of THOTH_HOME asks as themselves; Slack's rule still holds for
    anyone else (--user, --channel, --channel-type), and --all is the operator's view.
    """
    if args.all:
        if args.channel or args.channel_type or args.user:
            raise BadInput("--all sees everything: leave out --user, --channel, --channel-type")
        return Viewer(sees_everything=True)
    if args.channel or args.channel_type:
        return Viewer(args.team, args.channel or LOCAL_CHANNEL, args.channel_type or "public",
                      args.user)
    return Viewer(args.team, TERMINAL_CHANNEL, "im", args.user or login_name())


def _nothing_matched(app: Thoth, query: str, viewer: Viewer, k: int, now: float | None) -> str:
    """Say that nothing matched, and whether asking from elsewhere would find something."""
    if viewer.sees_everything:
        return "no episode matched (none shares a word with it or comes close in meaning)"
    elsewhere = app.episodic.recall(query, Viewer(sees_everything=True), k=k, now=now)
    if not elsewhere:
        return "no episode matched (none shares a word with it or comes close in meaning)"
    teams = sorted({hit.episode.team for hit in elsewhere} - {viewer.team})
    widen = "--all (the operator's view of every place)"
    if teams:
        widen += f", or --team {teams[0]} to ask as someone in that workspace"
    return (f"nothing you may see from here matched; {len(elsewhere)} episode(s) in places"
            f" you cannot see do: {widen}")


def _hit_json(hit: Hit) -> dict[str, object]:
    return {**episode_record(hit.episode), "score": round(hit.score, 6)}


def _hit_line(rank: int, hit: Hit) -> str:
    episode = hit.episode
    day = datetime.fromtimestamp(episode.created_at, UTC).date().isoformat()
    text = " ".join(episode.user_text.split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return f"{rank}. {day}  {text}  [{episode.id}]"


def _epoch(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _iso_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {value!r}") from error


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from error
    # The same bounds as RECALL_TOP_K.
    if not 1 <= number <= 50:
        raise argparse.ArgumentTypeError("must be between 1 and 50")
    return number
