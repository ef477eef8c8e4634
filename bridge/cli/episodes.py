"""`thoth episodes import|export|purge|backfill`: bulk load and dump episodes as JSON
lines, delete the expired, bring old ones up to how new ones are stored."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from bridge.app import Thoth
from bridge.cli.login import login_name
from layers.episodic.importing import import_episodes
from layers.episodic.jsonl import episode_to_json
from layers.episodic.memory import redacted
from layers.shared.errors import BadInput


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
    exporter.add_argument("--team", help="only this Slack workspace's episodes (its id, T...)")
    exporter.set_defaults(handler=run_export)

    purge = actions.add_parser(
        "purge", help="delete episodes past EPISODE_RETENTION_DAYS, or all of one workspace's")
    purge.add_argument("--team", help="delete every episode of this Slack workspace (T...),"
                       " as after it uninstalled Thoth")
    # The purge is the command's own work: the pass every command makes first is skipped,
    # so what it deletes is counted and said.
    purge.set_defaults(handler=run_purge, purges_itself=True)

    backfill = actions.add_parser(
        "backfill", help="index episodes stored before this version as new ones are")
    backfill.set_defaults(handler=run_backfill)


def run_import(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    """A terminal sees a progress bar; piped output gets only the result line."""
    with tqdm(unit=" episodes", file=sys.stderr, disable=not sys.stderr.isatty()) as progress:
        def started(total: int) -> None:
            progress.total = total
            progress.refresh()

        imported = import_episodes(app.episodic, args.file, named=str(args.file),
                                   skip_bad=args.skip_bad,
                                   skip_hint=" (--skip-bad imports the good lines)",
                                   on_batch=progress.update,
                                   started=started)
    app.audit.record(actor=login_name(), action="episodes.import", target=str(args.file),
                     origin="cli", detail=f"{len(imported.stored)} episodes")
    print(f"imported {len(imported.stored)} episodes", file=out)
    if imported.skipped:
        print(f"skipped {len(imported.skipped)} bad lines; first: {imported.skipped[0]}",
              file=out)
    return 0


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
                if args.team is not None and episode.team != args.team:
                    continue
                # Redacted again on the way out, in case an older row predates a pattern.
                target.write(episode_to_json(redacted(episode)) + "\n")
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
    if args.team is not None:
        removed = app.episodic.purge_team(args.team)
        app.audit.record(actor=login_name(), action="episodes.purge", target=args.team,
                         origin="cli", detail=f"{removed} of workspace {args.team}")
        print(f"purged the {removed} episodes of workspace {args.team}", file=out)
        return 0
    days = app.settings.episode_retention_days
    if days == 0:
        print("EPISODE_RETENTION_DAYS is 0: episodes are kept forever; nothing purged", file=out)
        return 0
    removed = app.episodic.purge_older_than(days)
    app.audit.record(actor=login_name(), action="episodes.purge", target="episodes",
                     origin="cli", detail=f"{removed} older than {days} days")
    print(f"purged {removed} episodes older than {days} days", file=out)
    return 0


def run_backfill(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    """Safe to stop and run again, and to run beside `thoth serve` (backfill.py)."""
    backfill = app.episodic.backfill
    owed = backfill.owed()
    if not owed:
        print("nothing to backfill: every episode is stored as new ones are", file=out)
        return 0
    print("to do: " + ", ".join(f"{o.task} for {o.episodes} episodes" for o in owed), file=out)
    with tqdm(total=sum(o.episodes for o in owed), unit=" episodes", file=sys.stderr,
              disable=not sys.stderr.isatty()) as progress:
        done = backfill.run(on_batch=progress.update)
    left = backfill.owed()
    print(f"backfilled {done} episode tasks"
          + ("" if not left else "; still owed (RECALL_LEVERS leaves them): "
             + ", ".join(f"{o.task} for {o.episodes}" for o in left)), file=out)
    return 0
