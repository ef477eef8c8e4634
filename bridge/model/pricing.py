"""Token usage and what it costs (US dollars per million tokens, from settings)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

# A dated snapshot of a listed model (``claude-haiku-4-5-20251001``) is that model; any
# other longer id is a model of its own (``claude-fable-5-2`` is not ``claude-fable-5``).
SNAPSHOT_SUFFIX = re.compile(r"-\d{8}$")
# A web search (Anthropic's server tool) is charged per search beside the tokens: $10 per
# 1,000 on every model (the pricing page, "Web search tool"). A web fetch costs its tokens.
WEB_SEARCH_USD = 10 / 1000


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # Searches the model's API ran for the call (``usage.server_tool_use``).
    web_searches: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.web_searches + other.web_searches,
        )

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt, cached or not: what a long-context price band is judged by."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


class PriceBand(BaseModel):
    """Every price times ``multiplier`` for a call whose prompt is over ``over_prompt_tokens``."""

    over_prompt_tokens: int = Field(gt=0)
    multiplier: float = Field(gt=0)


class ModelPrice(BaseModel):
    """Dollars per million tokens of each kind."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    bands: list[PriceBand] = Field(default_factory=list)

    def cost(self, usage: Usage) -> float:
        """One call's cost. A band applies to the whole call (output included), as
        Anthropic's long-context prices do, judged by that call's own prompt."""
        reached = [b for b in self.bands if usage.prompt_tokens > b.over_prompt_tokens]
        multiplier = max(reached, key=lambda b: b.over_prompt_tokens).multiplier if reached else 1
        return multiplier * (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000 + usage.web_searches * WEB_SEARCH_USD


def listed_id(model: str, listed: Mapping[str, object]) -> str | None:
    """The listed id ``model`` is: itself, or the model a dated snapshot id belongs to."""
    if model in listed:
        return model
    base = SNAPSHOT_SUFFIX.sub("", model)
    return base if base in listed else None


def dearest(table: Mapping[str, ModelPrice]) -> ModelPrice:
    return max(table.values(), key=lambda price: price.output)


def price_of(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice:
    """The price of ``model`` (or its dated snapshot); an unknown model is charged as the
    dearest listed, so the daily cap errs on the safe side (``thoth doctor`` says so)."""
    known = listed_id(model, table)
    if known is not None:
        return table[known]
    log.warning("no price for model %s; charging it as the dearest listed", model)
    return dearest(table)
