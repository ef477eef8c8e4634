"""The daily cost cap and the charge, once, around any language model.

Every model call — a turn's rounds, a reflection — goes through this wrapper: before
the call, today's spend is read and a call at or over ``DAILY_COST_CAP_USD`` is
refused (``CostCapReached``); after it, the call's tokens are priced and written to
the ledger at once, so the next call (the next tool round, another replica's turn)
counts it. The price rides back on the result (``cost_usd``) for the episode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

from bridge.model.cost_ledger import CostLedger
from bridge.model.pricing import ModelPrice, price_of
from bridge.model.protocol import LanguageModel, ModelRequest, ModelResult, OnText
from layers.errors import CostCapReached
from layers.storage.retried import write_retried

# A busy database (another writer holds it past SQLite's own 10 s wait) is tried again.
RECORD_RETRY_S = (0.2, 1.0)


class MeteredModel:
    def __init__(
        self,
        inner: LanguageModel,
        ledger: CostLedger,
        prices: Mapping[str, ModelPrice],
        *,
        daily_cap_usd: float,
    ) -> None:
        self._inner = inner
        self._ledger = ledger
        self._prices = prices
        self._cap = daily_cap_usd

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        spent = await asyncio.to_thread(self._ledger.spent_today)
        if spent >= self._cap:
            raise CostCapReached(self._cap)
        result = await self._inner.respond(request, on_text)
        model = result.model or request.model
        cost = price_of(model, self._prices).cost(result.usage)
        # A failure for good is logged: the answer is not lost for a ledger row, and the
        # cap undercounts this call.
        await write_retried(
            f"the spend of a {request.purpose} call",
            lambda: self._ledger.record_all(
                [(model, result.usage, cost)], purpose=request.purpose,
                session_id=request.session_id,
            ),
            delays_s=RECORD_RETRY_S,
        )
        return replace(result, cost_usd=cost)

    async def aclose(self) -> None:
        await self._inner.aclose()
