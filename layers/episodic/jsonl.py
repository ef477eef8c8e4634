"""The JSON-lines format of `thoth episodes import/export` (a contract other tools use).

One object per line: ``{"id"?, "user_text", "summary", "created_at", "team"?,
"channel"?, "channel_type"?, "thread_ts"?, "user"?, "user_name"?}``; a missing
place means a public local channel. Export adds ``session_id``, ``cost_usd``, ``feedback`` and
``reply_model`` so that an export imports back without loss, and ``files`` (each file
shared with it: name, kind, size, mimetype, permalink, extract, unread) where it had any.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from layers.episodic.episode import (
    EPISODE_FIELDS,
    FEEDBACK_NAMES,
    MAX_TEXT_CHARS,
    Episode,
    EpisodeFile,
    Feedback,
)
from layers.shared.errors import BadInput
from layers.shared.places import LOCAL_CHANNEL, LOCAL_TEAM, ChannelType

FeedbackName = Literal["worked", "did_not_work"]
_FEEDBACK_BY_NAME = {name: value for value, name in FEEDBACK_NAMES.items() if name}

BoundedText = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]


class FileLine(BaseModel):
    """A file shared with the episode, as an export writes it (never its bytes)."""

    model_config = ConfigDict(extra="ignore")

    name: Annotated[str, Field(min_length=1, max_length=1000)]
    kind: Literal["image", "pdf", "text", "other"]
    size: Annotated[int, Field(ge=0)] = 0
    mimetype: str | None = None
    permalink: str | None = None
    extract: str = ""
    unread: str | None = None


class EpisodeLine(BaseModel):
    """One line of the import file, validated."""

    # A key this model does not declare is kept when it names a field of the record (a
    # plain field added later imports as given); any other is ignored.
    model_config = ConfigDict(extra="allow", str_strip_whitespace=False)

    id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    user_text: Annotated[BoundedText, Field(min_length=1)]
    summary: BoundedText
    created_at: datetime
    team: str | None = None
    channel: str | None = None
    channel_type: ChannelType | None = None
    thread_ts: str | None = None
    user: str | None = None
    user_name: str | None = None
    session_id: str | None = None
    cost_usd: Annotated[float, Field(ge=0)] = 0.0
    feedback: FeedbackName | None = None
    reply_model: str | None = None
    files: Annotated[list[FileLine], Field(max_length=100)] = []

    @field_validator("created_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        # A time without a zone is taken as UTC: the store keeps epoch seconds, and
        # every export and recall turns them back into dates, which must exist.
        value = value if value.tzinfo else value.replace(tzinfo=UTC)
        try:
            year = value.astimezone(UTC).year
        except OverflowError:
            year = 0
        if not 1970 <= year <= 9999:
            raise ValueError("must be between 1970 and 9999 (in UTC)")
        return value

    @field_validator("user_text")
    @classmethod
    def _said_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is only whitespace")
        return value

    def to_episode(self) -> Episode:
        return Episode(
            id=self.id or uuid.uuid4().hex,
            user_text=self.user_text,
            summary=self.summary,
            created_at=self.created_at.timestamp(),
            team=self.team or LOCAL_TEAM,
            channel=self.channel or LOCAL_CHANNEL,
            channel_type=self.channel_type or "public",
            # An empty thread id is no thread (the thread index keys both as '').
            thread_ts=self.thread_ts or None,
            user=self.user,
            user_name=self.user_name,
            session_id=self.session_id,
            cost_usd=self.cost_usd,
            feedback=_FEEDBACK_BY_NAME[self.feedback] if self.feedback else Feedback.NONE,
            reply_model=self.reply_model,
            files=tuple(EpisodeFile(**file.model_dump()) for file in self.files),
            **{name: value for name, value in (self.model_extra or {}).items()
               if name in EPISODE_FIELDS},
        )


@dataclass(frozen=True)
class LineError:
    """Why one line of a file was refused."""

    line_number: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_number}: {self.reason}"


def read_json_lines(path: Path) -> Iterator[tuple[int, object | LineError]]:
    """Each non-blank line's parsed JSON (or why it is not JSON), with its 1-based number."""
    try:
        # Line by line: a file of 100 000 episodes is never held whole.
        with path.open("rb") as file:
            yield from _parsed_lines(file)
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror or error}") from error


def _parsed_lines(file: BinaryIO) -> Iterator[tuple[int, object | LineError]]:
    for number, line in enumerate(file, start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            yield number, LineError(number, f"not valid UTF-8 (byte {error.start})")
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            yield number, LineError(number, f"not valid JSON ({error.msg})")
            continue
        try:
            # A "\ud800" escape decodes to a lone surrogate, which no store takes.
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            yield number, LineError(number, "holds a \\u escape that is not a character"
                                            " (a lone surrogate such as \\ud800)")
            continue
        yield number, value


def parse_episode_line(number: int, value: object) -> Episode | LineError:
    """A validated episode, or the first reason the line is malformed."""
    if not isinstance(value, dict):
        return LineError(number, "expected a JSON object")
    try:
        return EpisodeLine.model_validate(value).to_episode()
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "line"
        return LineError(number, f"{where}: {first['msg']}")


def episode_to_json(episode: Episode) -> str:
    """One export line; imports back to the same episode."""
    return json.dumps(episode_record(episode), ensure_ascii=False)


# Fields whose JSON form is not the value itself (every other field is written as it is).
_AS_JSON: dict[str, Callable[[Any], object]] = {
    "created_at": lambda at: datetime.fromtimestamp(at, UTC).isoformat(),
    "feedback": lambda feedback: FEEDBACK_NAMES[feedback],
}


def episode_record(episode: Episode) -> dict[str, object]:
    """An episode as JSON values, in the import/export format (``thoth recall --json``
    prints the same, with its score): every field of the record, by name."""
    record: dict[str, object] = {
        name: _AS_JSON[name](getattr(episode, name)) if name in _AS_JSON
        else getattr(episode, name)
        for name in EPISODE_FIELDS
    }
    if episode.files:
        record["files"] = [dataclasses.asdict(file) for file in episode.files]
    return record
