"""Importing episodes from a JSON-lines file — the one way `thoth episodes import` and
the console's import do it.

Two passes over the file, line by line: check every line, then import in batches. All or
nothing: a bad line imports nothing unless ``skip_bad``, and a batch that fails (a full
disk) takes back the batches stored before it. Memory stays flat whatever the file's
size: the first pass holds ids and refusals, never episodes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from layers.episodic.episode import Episode
from layers.episodic.jsonl import LineError, parse_episode_line, read_json_lines
from layers.episodic.memory import EpisodicMemory
from layers.shared.errors import BadInput

# Episodes embedded and stored together: enough to keep MiniLM busy, few enough that
# memory stays flat whatever the file's size.
IMPORT_BATCH = 256


@dataclass(frozen=True)
class Imported:
    stored: list[str]
    # The lines skipped (``skip_bad``), in file order.
    skipped: list[LineError]


def import_episodes(
    memory: EpisodicMemory, path: Path, *, named: str, skip_bad: bool, skip_hint: str = "",
    on_batch: Callable[[int], object] = lambda count: None,
    started: Callable[[int], object] = lambda total: None,
) -> Imported:
    """Store the file's episodes (``BadInput`` naming the file as ``named`` when it
    cannot, ending with ``skip_hint`` when bad lines stopped it); ``started`` hears how many
    will import, ``on_batch`` each batch's size."""
    good, errors = _check_file(path, memory)
    if errors and not skip_bad:
        more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
        raise BadInput(f"{named}: {errors[0]}{more}; nothing was imported{skip_hint}")
    if not good:
        raise BadInput(f"{named}: no episodes to import")
    started(good)
    skipped = {error.line_number for error in errors}
    stored: list[str] = []
    try:
        for batch in _batches(_episodes(path, skipped), IMPORT_BATCH):
            stored += memory.remember(batch)
            on_batch(len(batch))
    except BaseException:
        memory.forget_many(stored)
        raise
    return Imported(stored, errors)


def _check_file(path: Path, memory: EpisodicMemory) -> tuple[int, list[LineError]]:
    """How many lines will import, and every refused line; ids checked for clashes."""
    errors: list[LineError] = []
    line_of: dict[str, int] = {}
    for number, value in read_json_lines(path):
        parsed = value if isinstance(value, LineError) else parse_episode_line(number, value)
        if isinstance(parsed, LineError):
            errors.append(parsed)
        elif parsed.id in line_of:
            errors.append(LineError(number, f"id {parsed.id!r} appears twice in the file"))
        else:
            line_of[parsed.id] = number
    for taken in memory.store.existing_ids(line_of):
        errors.append(LineError(line_of.pop(taken), f"id {taken!r} already exists"))
    errors.sort(key=lambda error: error.line_number)
    return len(line_of), errors


def _episodes(path: Path, skipped: set[int]) -> Iterator[Episode]:
    for number, value in read_json_lines(path):
        if number in skipped or isinstance(value, LineError):
            continue
        parsed = parse_episode_line(number, value)
        if isinstance(parsed, Episode):
            yield parsed


def _batches(episodes: Iterator[Episode], size: int) -> Iterator[list[Episode]]:
    batch: list[Episode] = []
    for episode in episodes:
        batch.append(episode)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
