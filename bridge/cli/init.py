"""`thoth init`: create THOTH_HOME, its database and the brain repo (safe to run again)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from bridge.app import Thoth
from layers.shared.errors import ConfigurationError


def register(commands: Any) -> None:
    parser = commands.add_parser("init", help="create THOTH_HOME, the database and the brain")
    parser.set_defaults(handler=run_init)


def run_init(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    # build() already created the directory, ran the migrations and created the brain.
    if app.brain_problem:
        raise ConfigurationError(app.brain_problem)
    print(f"Thoth home ready at {app.settings.thoth_home}", file=out)
    print(f"database: {app.db.where} ({app.episodic.store.count()} episodes)", file=out)
    print(f"brain: {app.brain.path} ({len(app.skills.skills())} skills)", file=out)
    return 0
