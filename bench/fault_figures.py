"""What one fault's run measured, as ``bench/faults.py`` prints it.

Each ``bench/fault_<name>.py`` has ``measure() -> FaultFigures`` (and runs alone with its
own ``main``); ``bench/faults.py`` runs them in sequence into one table. The target for
every fault (issue 55): nothing lost, nothing doubled, back within 10 s of the service's
return.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RECOVERY_TARGET_S = 10.0


@dataclass(frozen=True)
class FaultFigures:
    fault: str
    # Slack deliveries: sent, answered exactly once, told plainly they could not be
    # answered (and not answered), never answered nor told, answered more than once.
    sent: int
    answered_once: int
    told_failed: int
    lost: int
    doubled: int
    # Seconds from the service's return to the first thing that needed it succeeding
    # again (a reply posted, an outbox row sent, a push landed).
    recovery_s: float
    # Stored writes (episodes, transcript turns, notes, approvals, identity rows, commits)
    # that should exist and do not, and that exist twice.
    writes_lost: int
    writes_doubled: int
    # One short line: what was failed and how (e.g. "pg_ctl restart -m fast mid-burst").
    how: str = ""

    @property
    def met(self) -> bool:
        return (self.lost == 0 and self.doubled == 0 and self.writes_lost == 0
                and self.writes_doubled == 0 and self.recovery_s <= RECOVERY_TARGET_S)


HEADER = ("fault", "sent", "once", "told", "lost", "doubled", "recovery s",
          "writes lost", "writes doubled", "target")


def print_table(rows: Sequence[FaultFigures]) -> None:
    table = [HEADER] + [
        (row.fault, str(row.sent), str(row.answered_once), str(row.told_failed),
         str(row.lost), str(row.doubled), f"{row.recovery_s:.1f}", str(row.writes_lost),
         str(row.writes_doubled), "met" if row.met else "NOT met")
        for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(len(HEADER))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
    for row in rows:
        if row.how:
            print(f"{row.fault}: {row.how}")
