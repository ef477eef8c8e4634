"""The daily cost caps and the charge, once, around any language model.

Every model call — a turn's rounds, a reflection — goes through this wrapper: before
the call it reserves its estimated cost, refused (``CostCapReached``) when today's spend
and the calls in flight are at ``DAILY_COST_CAP_USD``, or at the speaker's
``DAILY_COST_CAP_PER_PERSON_USD``; after it, the call's tokens are priced and written to
the ledger in place of the reservation, so the next call (the next tool round, another
replica's turn) counts it. The price rides back on the result (``cost_usd``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

from bridge.model.cost_ledger import CostLedger
from bridge.model.pricing import ModelPrice, Usage, price_of
from bridge.model.protocol import (
    WEB_MAX_USES,
    LanguageModel,
    ModelRequest,
    ModelResult,
    ModelUnavailable,
    OnText,
)
from layers.shared.offloaded import Offloaded
from layers.shared.storage.retried import write_retried
from layers.working.budget import CHARS_PER_TOKEN

# A busy database (another writer holds it past SQLite's own 10 s wait) is tried again.
RECORD_RETRY_S = (0.2, 1.0)


def estimated_cost(request: ModelRequest, price: ModelPrice) -> float:
    """The most the call can cost: nothing read from the cache, and all of ``max_tokens``
    written. Held while it runs, so calls at once never pass a cap by more than one
    call's worth (the one let through just under it); the rest is given back after.
    With web search offered, every search the call may run is held too."""
    searches = WEB_MAX_USES if "search" in request.web else 0
    return price.cost(Usage(input_tokens=prompt_tokens(request),
                            output_tokens=request.max_tokens, web_searches=searches))


def prompt_tokens(request: ModelRequest) -> int:
    """The prompt's size, estimated as the transcript budget estimates text."""
    return int(request.characters / CHARS_PER_TOKEN) + 1


class MeteredModel:
    def __init__(
        self,
        inner: LanguageModel,
        ledger: Offloaded[CostLedger],
        prices: Mapping[str, ModelPrice],
        *,
        daily_cap_usd: float,
        person_cap_usd: float | None = None,
    ) -> None:
        self._inner = inner
        self._ledger = ledger
        self._prices = prices
        self._cap = daily_cap_usd
        self._person_cap = person_cap_usd

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def memory_only(self) -> bool:
        return self._inner.memory_only

    @property
    def inner(self) -> LanguageModel:
        """The model it meters (its retries and their circuit, for the answer-later job)."""
        return self._inner

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        price = price_of(request.model, self._prices)
        estimate = estimated_cost(request, price)
        reservation = await self._ledger.run(lambda ledger: ledger.reserve(
            estimate, cap_usd=self._cap, person=request.person,
            person_cap_usd=self._person_cap,
        ))
        try:
            result = await self._inner.respond(request, on_text)
        except ModelUnavailable:
            # Refused or failed: Anthropic charges nothing for an error.
            await asyncio.shield(self._ledger.run(lambda ledger: ledger.release(reservation)))
            raise
        except BaseException:
            # Stopped by its reader, or cut off, once the request was out: the prompt was
            # billed. Charged as estimated (what it wrote is not known), so stopping
            # replies cannot get around the caps.
            prompt = Usage(input_tokens=prompt_tokens(request))
            await asyncio.shield(self._ledger.run(lambda ledger: ledger.record_all(
                [(request.model, prompt, price.cost(prompt))], purpose=request.purpose,
                session_id=request.session_id, person=request.person, settles=reservation,
            )))
            raise
        model = result.model or request.model
        if model != request.model:  # the API answered with a dated id of it, say
            price = price_of(model, self._prices)
        cost = price.cost(result.usage)
        # A failure for good is logged: the answer is not lost for a ledger row, and the
        # cap undercounts this call (its reservation lapses after RESERVATION_TTL_S).
        await write_retried(
            f"the spend of a {request.purpose} call",
            lambda: self._ledger.run(lambda ledger: ledger.record_all(
                [(model, result.usage, cost)], purpose=request.purpose,
                session_id=request.session_id, person=request.person, settles=reservation,
            )),
            delays_s=RECORD_RETRY_S,
        )
        return replace(result, cost_usd=cost)

    async def aclose(self) -> None:
        await self._inner.aclose()
