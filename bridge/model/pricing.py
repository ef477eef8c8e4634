"""Token usage and what it costs (US dollars per million tokens, from settings)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


class ModelPrice(BaseModel):
    """Dollars per million tokens of each kind."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float = Field(ge=0)
    cache_write: float = Field(ge=0)

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / 1_000_000


# Anthropic's list prices (5-minute cache writes). A model missing from the table
# is priced as the dearest one, so the daily cap errs on the safe side.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-opus-4-1": ModelPrice(input=15, output=75, cache_read=1.5, cache_write=18.75),
    "claude-opus-4-6": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-5": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-sonnet-4-6": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-sonnet-4-5": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-sonnet-4": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-haiku-4-5": ModelPrice(input=1, output=5, cache_read=0.1, cache_write=1.25),
}


def price_of(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice:
    """The price of ``model``: exact name, then the longest listed prefix (dated ids)."""
    if model in table:
        return table[model]
    prefixes = [name for name in table if model.startswith(name)]
    if prefixes:
        return table[max(prefixes, key=len)]
    dearest = max(table.values(), key=lambda price: price.output)
    log.warning("no price for model %s; charging it as the dearest listed", model)
    return dearest
