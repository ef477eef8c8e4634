"""Each command's cold wall time: a new process, as a person runs it.

Commands that never embed (skills list, people show, episodes export, doctor) should
not pay for the model; `thoth recall` loads it once. Printed: the median and the
slowest of ``--runs`` runs of each command, in a home made for the run (a few
episodes, a fact), and beside them the floor — a bare interpreter, and one that only
imports the libraries every command loads (settings, arrays, the secret catalogue).
Say whether the machine was quiet.

    python bench/cli_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR = {
    "python (nothing imported)": "pass",
    "python importing the libraries every command needs": (
        "import asyncio, sqlite3, pydantic_settings, numpy, detect_secrets.core.plugins.util"
    ),
}
COMMANDS = [
    ["skills", "list"],
    ["people", "show", "dana"],
    ["episodes", "export"],
    ["doctor"],
    ["recall", "where does the staging database live"],
]


def _thoth(home: Path, *argv: str, stdin: str = "") -> float:
    env = {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bridge", *argv], env=env, input=stdin,
                          capture_output=True, text=True, cwd=home.parent)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):  # doctor exits 1 on a warning-free FAIL (no model key)
        raise SystemExit(f"thoth {' '.join(argv)} failed: {done.stderr.strip()[-300:]}")
    return elapsed


def _python(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        _thoth(home, "chat", "--user", "dana",
               stdin="our staging database lives on pelican-db-7\nI prefer short answers.\n")
        print(f"{'command':<52} {'median':>8} {'slowest':>8}")
        for command in COMMANDS:
            times = [_thoth(home, *command) for _ in range(args.runs)]
            _row("thoth " + " ".join(command), times)
        for name, code in FLOOR.items():
            _row(name, [_python(code) for _ in range(args.runs)])


def _row(name: str, times: list[float]) -> None:
    print(f"{name:<52} {statistics.median(times):>7.2f}s {max(times):>7.2f}s")


if __name__ == "__main__":
    main()
