"""`thoth init`: create THOTH_HOME and its database (safe to run again)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bridge.app import Thoth


def register(commands: Any) -> None:
    parser = commands.add_parser("init", help="create THOTH_HOME and the database")
    parser.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    # build() already created the directory and ran the migrations.
    print(f"Thoth home ready at {app.settings.thoth_home}", file=out)
    print(f"database: {app.settings.db_path} ({app.episodic.store.count()} episodes)", file=out)
    return 0
