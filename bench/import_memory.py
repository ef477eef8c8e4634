"""Peak memory and wall time of `thoth episodes import`, by file size.

The import reads its file line by line and stores 256 episodes at a time, so its peak
memory should not grow with the file. Each size runs as a new process against a new
THOTH_HOME; printed: episodes, wall seconds, episodes per second, peak RSS in MB.

    python bench/import_memory.py [--sizes 1000 4000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _write(path: Path, count: int) -> None:
    with path.open("w") as file:
        for number in range(count):
            file.write(json.dumps({
                "id": f"e{number}",
                "user_text": f"note {number}: the staging deploy of service {number % 97} moved"
                             f" to Thursday after the review of incident {number % 13}",
                "summary": f"deploy of service {number % 97} moves to Thursday",
                "created_at": "2026-11-01T10:00:00Z",
            }) + "\n")


def _import(home: Path, path: Path) -> tuple[float, float]:
    env = {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "bridge", "episodes", "import", str(path)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import failed: {process.stderr.read() if process.stderr else ''}")
    return elapsed, usage.ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000])
    args = parser.parse_args()
    print(f"{'episodes':>9} {'wall':>8} {'per second':>11} {'peak RSS':>10}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "episodes.jsonl"
            _write(path, size)
            elapsed, peak_mb = _import(Path(folder) / "home", path)
            print(f"{size:>9} {elapsed:>7.1f}s {size / elapsed:>11.0f} {peak_mb:>8.0f} MB")


if __name__ == "__main__":
    main()
