"""Issue 55: the six faults of what Thoth stands on, one after another, into one table.

Each fault is a bench of its own (``bench/fault_<name>.py``, each runnable alone with its
own flags); this runs each with its defaults, the durations the issue names, and prints
per fault: deliveries sent / answered once / told they failed / lost / doubled, the seconds
from the service's return to its first use succeeding, and writes lost or doubled. The
target, for every fault: 0 lost, 0 doubled, recovery <= 10 s.

    python bench/faults.py [--only postgres,model]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bench.fault_figures import FaultFigures, print_table  # noqa: E402

# In the order: its module under bench/ is fault_<name>.py.
FAULTS = ("postgres", "model", "slack", "honcho", "disk_full", "brain_remote")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(FAULTS),
                        help=f"a comma-separated choice of {', '.join(FAULTS)}")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(FAULTS))
    if unknown:
        parser.error(f"no such fault: {', '.join(unknown)} (choose from {', '.join(FAULTS)})")
    rows: list[FaultFigures] = []
    for name in chosen:
        started = time.monotonic()
        print(f"running {name}...", file=sys.stderr, flush=True)
        bench = importlib.import_module(f"bench.fault_{name}")
        rows.append(bench.measure())
        print(f"{name} took {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    print_table(rows)
    return 0 if all(row.met for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
