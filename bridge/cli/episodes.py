"""`thoth episodes import|export|purge`: bulk load and dump episodes as JSON lines."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.episodic.episode import Episode
from layers.episodic.jsonl import LineError, episode_to_json, parse_episode_line, read_json_lines
from layers.errors import BadInput
from layers.redaction import redact


def register(commands: Any) -> None:
    parser = commands.add_parser("episodes", help="import, export or purge episodes")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))

    importer = actions.add_parser("import", help="load episodes from a JSON-lines file")
    importer.add_argument("file", type=Path, help="the JSON-lines file (a pipe is fine)")
    importer.add_argument(
        "--skip-bad",
        action="store_true",
        help="import the good lines and report how many were skipped",
    )
    importer.set_defaults(handler=run_import)

    exporter = actions.add_parser("export", help="write every episode as JSON lines")
    exporter.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")
    exporter.set_defaults(handler=run_export)

    purge = actions.add_parser("purge", help="delete episodes past EPISODE_RETENTION_DAYS")
    # The purge is the command's own work: the pass every command makes first is skipped,
    # so what it deletes is counted and said.
    purge.set_defaults(handler=run_purge, purges_itself=True)


# Episodes embedded and stored together: enough to keep MiniLM busy, few enough that
# memory stays flat whatever the file's size.
IMPORT_BATCH = 256


def run_import(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    """Two passes over the file, line by line: check every line, then import in batches.

    All or nothing, as before: a bad line imports nothing unless --skip-bad, and a batch
    that fails (a full disk) takes back the batches stored before it. A terminal sees a
    progress bar; piped output gets only the result line.
    """
    good, errors = _check_file(args.file, app)
    if errors and not args.skip_bad:
        more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
        raise BadInput(
            f"{args.file}: {errors[0]}{more}; nothing was imported"
            " (--skip-bad imports the good lines)"
        )
    if not good:
        raise BadInput(f"{args.file}: no episodes to import")
    skipped = {error.line_number for error in errors}
    stored: list[str] = []
    try:
        with tqdm(total=good, unit=" episodes", file=sys.stderr,
                  disable=not sys.stderr.isatty()) as progress:
            for batch in _batches(_episodes(args.file, skipped), IMPORT_BATCH):
                stored += app.episodic.remember(batch)
                progress.update(len(batch))
    except BaseException:
        app.episodic.forget_many(stored)
        raise
    app.audit.record(actor=login_name(), action="episodes.import", target=str(args.file),
                     origin="cli", detail=f"{len(stored)} episodes")
    print(f"imported {len(stored)} episodes", file=out)
    if errors:
        print(f"skipped {len(errors)} bad lines; first: {errors[0]}", file=out)
    return 0


def _check_file(path: Path, app: Thoth) -> tuple[int, list[LineError]]:
    """How many lines will import, and every refused line; ids checked for clashes.

    Holds the ids (to find a clash) and the refusals, never the episodes.
    """
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
    for taken in app.episodic.store.existing_ids(line_of):
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


def run_export(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    target: TextIO
    if args.output is None:
        target = out
    else:
        try:
            target = args.output.open("w", encoding="utf-8")
        except OSError as error:
            raise BadInput(f"cannot write {args.output}: {error.strerror or error}") from error
    count = 0
    try:
        try:
            for episode in app.episodic.store.iter_episodes():
                # Redacted again on the way out, in case an older row predates a pattern.
                clean = replace(
                    episode, user_text=redact(episode.user_text), summary=redact(episode.summary)
                )
                target.write(episode_to_json(clean) + "\n")
                count += 1
        finally:
            if target is not out:
                target.close()
    except BrokenPipeError:
        if target is not out:
            raise BadInput(f"cannot write {args.output}: its reader is gone") from None
        raise  # `export | head`: the reader had enough (bridge/cli/main.py ends quietly)
    except OSError as error:  # a full disk: at a write or at the close
        where = args.output or "stdout"
        raise BadInput(f"cannot write {where}: {error.strerror or error}") from error
    if args.output is not None:
        print(f"exported {count} episodes to {args.output}", file=out)
    return 0


def run_purge(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    days = app.settings.episode_retention_days
    if days == 0:
        print("EPISODE_RETENTION_DAYS is 0: episodes are kept forever; nothing purged", file=out)
        return 0
    removed = app.episodic.purge_older_than(days)
    app.audit.record(actor=login_name(), action="episodes.purge", target="episodes",
                     origin="cli", detail=f"{removed} older than {days} days")
    print(f"purged {removed} episodes older than {days} days", file=out)
    return 0
