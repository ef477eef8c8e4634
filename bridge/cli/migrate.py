"""`thoth migrate --to postgresql://…`: copy the embedded home's database into
PostgreSQL, then prove it (every table's rows counted and checksummed on both sides).

Run it with Thoth stopped. The brain (persona and skills) is a git repository, not a
table: it stays where it is, or moves with ``BRAIN_REMOTE`` (docs/deployment.md).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
from typing import Any, TextIO

from tqdm import tqdm

from bridge.all_tables import ALL_SCHEMAS
from bridge.app import Thoth
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.storage.copy_database import check_copy, copy_database, plan_copy
from layers.shared.storage.engines import connect_postgres
from layers.shared.storage.postgres import redacted_url


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "migrate", help="copy this home's database into PostgreSQL and verify the copy"
    )
    parser.add_argument("--to", required=True, metavar="postgresql://…",
                        help="the PostgreSQL database to copy into (with pgvector available)")
    parser.add_argument("--replace", action="store_true",
                        help="empty Thoth's tables in the target first, if it holds any rows")
    parser.set_defaults(handler=run_migrate)


def run_migrate(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    if urllib.parse.urlsplit(args.to).scheme not in ("postgresql", "postgres"):
        raise BadInput(f"--to {redacted_url(args.to)} is not a postgresql:// URL")
    if app.db.dialect != "sqlite":
        raise ConfigurationError(
            f"DATABASE_URL is set, so this Thoth already runs on {app.db.where}: `thoth"
            " migrate` copies the embedded home (THOTH_HOME); unset DATABASE_URL to run it"
        )
    started = time.monotonic()
    target = connect_postgres(args.to, schemas=ALL_SCHEMAS, named_by="--to")
    try:
        tables = plan_copy(app.db, target)
        with tqdm(unit=" rows", file=sys.stderr, disable=not sys.stderr.isatty()) as progress:
            copy_database(app.db, target, tables, replace=args.replace, on_rows=progress.update)
        checks = check_copy(app.db, target, tables)
    finally:
        target.close()
    width = max(len(check.name) for check in checks)
    for check in checks:
        verdict = "ok" if check.matches else (
            f"DIFFERS: {check.target_rows} rows, checksum {check.target_checksum}"
        )
        print(f"  {check.name:<{width}}  {check.source_rows:>9} rows  {check.source_checksum}"
              f"  {verdict}", file=out)
    differ = [check.name for check in checks if not check.matches]
    if differ:
        raise ConfigurationError(
            f"the copy in {redacted_url(args.to)} differs from the home in {', '.join(differ)}:"
            " keep using the home, and run again with --replace"
        )
    rows = sum(check.source_rows for check in checks)
    print(
        f"Copied {rows} rows in {len(checks)} tables from {app.db.where} to"
        f" {redacted_url(args.to)} in {time.monotonic() - started:.1f} s; every count and"
        " checksum matches. Set DATABASE_URL to it to run Thoth there.",
        file=out,
    )
    return 0
