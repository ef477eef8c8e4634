"""`thoth doctor`: check configuration and every backend; say what is wrong and the fix."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.health_checks import Status, run_checks


def register(commands: Any) -> None:
    parser = commands.add_parser("doctor", help="check configuration and every backend")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--deep", action="store_true",
                        help="also load the embedding model and embed a word (slower)")
    parser.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    checks = run_checks(app, deep=args.deep)
    if args.json:
        print(json.dumps([asdict(check) for check in checks], ensure_ascii=False), file=out)
    else:
        for check in checks:
            print(f"{check.status.value:<5} {check.name:<10} {check.detail}", file=out)
            if check.fix and check.status is not Status.OK:
                print(f"{'':<16}fix: {check.fix}", file=out)
    return 1 if any(check.status is Status.FAIL for check in checks) else 0
