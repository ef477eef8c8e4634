"""Each command's cold wall time: a new process, as a person runs it.

Commands that never embed (skills list, people show, episodes export, doctor) should
not pay for torch, sentence-transformers or the model; `thoth recall` loads the model
once. Printed: the median and the slowest of ``--runs`` runs of each command, in a
home made for the run (a few episodes, a fact). Say whether the machine was quiet.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        _thoth(home, "chat", "--user", "dana",
               stdin="our staging database lives on pelican-db-7\nI prefer short answers.\n")
        print(f"{'command':<46} {'median':>8} {'slowest':>8}")
        for command in COMMANDS:
            times = [_thoth(home, *command) for _ in range(args.runs)]
            print(f"{'thoth ' + ' '.join(command):<46} {statistics.median(times):>7.2f}s"
                  f" {max(times):>7.2f}s")


if __name__ == "__main__":
    main()
