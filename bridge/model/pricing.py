"""Token usage and what it costs (US dollars per million tokens, from settings)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

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


@dataclass(frozen=True)
class ModelInfo:
    """One model of the catalogue: its lifecycle status and its list price."""

    id: str
    status: str  # current | legacy | deprecated | retired
    price: ModelPrice
    retires: str | None = None


@dataclass(frozen=True)
class ModelCatalogue:
    """Anthropic's models and prices as of one date (``models.json``, edited by hand)."""

    as_of: str
    recommended: str
    models: dict[str, ModelInfo]

    def find(self, model: str) -> ModelInfo | None:
        """The model by id, or by the longest listed prefix (dated snapshot ids)."""
        if model in self.models:
            return self.models[model]
        prefixes = [name for name in self.models if model.startswith(name)]
        return self.models[max(prefixes, key=len)] if prefixes else None


def load_catalogue() -> ModelCatalogue:
    data = json.loads(resources.files("bridge.model").joinpath("models.json").read_text())
    models = {
        model_id: ModelInfo(
            model_id,
            str(entry["status"]),
            ModelPrice(input=entry["input"], output=entry["output"],
                       cache_read=entry["cache_read"], cache_write=entry["cache_write"]),
            entry.get("retires"),
        )
        for model_id, entry in data["models"].items()
    }
    return ModelCatalogue(str(data["as_of"]), str(data["recommended"]), models)


# A model missing from the table is priced as the dearest one, so the daily cap errs on
# the safe side (and `thoth doctor` says so).
CATALOGUE = load_catalogue()
DEFAULT_PRICES: dict[str, ModelPrice] = {m.id: m.price for m in CATALOGUE.models.values()}


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
