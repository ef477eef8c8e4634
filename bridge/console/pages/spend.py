"""What the model cost: per UTC day, per person and per channel, the last 30 days."""

from __future__ import annotations

from bridge.console.dependencies import ConsoleDependencies
from bridge.model.spend_report import SpendReport

DAYS = 30


async def spend(parts: ConsoleDependencies) -> SpendReport:
    return await parts.stores.run(lambda stores: stores.spend.report(days=DAYS))
