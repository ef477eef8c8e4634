"""Anthropic's models as of one date: status, prices and what each model's API accepts.

``models.json`` is edited by hand from Anthropic's pages (its ``source`` says which).
The Anthropic model reads a model's ``Capabilities`` to shape each request (thinking,
effort, forced tools, ``max_tokens``), ``thoth doctor`` shows the configured models'
rows, and the loopback Messages API in ``tests/servers`` refuses what each row says the
real API refuses. An id that is not listed gets no row of a neighbour: it is unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from bridge.model.pricing import ModelPrice, PriceBand, listed_id

Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORT_LEVELS: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class Capabilities:
    context_window: int
    max_output: int
    # What a request that says nothing about thinking gets: "adaptive" or "off".
    thinking: str
    # thinking.type values answered with 400 ("enabled", "disabled", "adaptive").
    thinking_refused: frozenset[str]
    forced_tool_choice: bool
    min_cache_tokens: int
    effort_levels: tuple[str, ...] = ()
    effort_default: str | None = None
    # What the model is shown of files (``vision`` in models.json): images and PDFs as
    # content blocks where it takes them, at most so many a request; text otherwise.
    images: bool = False
    pdfs: bool = False
    images_a_request: int = 0
    pdf_pages: int = 0

    @property
    def thinks(self) -> bool:
        """Whether every request Thoth sends is answered with thinking first."""
        return self.thinking == "adaptive"

    @property
    def thinking_mode(self) -> str:
        """How doctor names it: always adaptive (thinking cannot be turned off), adaptive (on
        unless a request turns it off), optional (off unless asked for) or none."""
        if self.thinks:
            return "always adaptive" if "disabled" in self.thinking_refused else "adaptive"
        if "adaptive" in self.thinking_refused and "enabled" in self.thinking_refused:
            return "none"
        return "optional"

    def effort_for(self, wanted: str | None) -> str | None:
        """The level to send: ``wanted`` if this model takes it, else the nearest lower level
        it takes (a setting above a model's top is not an error), None without effort."""
        if wanted not in EFFORT_LEVELS or not self.effort_levels:
            return None
        if wanted in self.effort_levels:
            return wanted
        lower = [level for level in EFFORT_LEVELS[: EFFORT_LEVELS.index(wanted)]
                 if level in self.effort_levels]
        return lower[-1] if lower else self.effort_levels[0]


@dataclass(frozen=True)
class ModelInfo:
    """One model of the catalogue: its lifecycle status, list price and capabilities."""

    id: str
    status: str  # current | legacy | deprecated | retired
    price: ModelPrice
    capabilities: Capabilities
    retires: str | None = None


@dataclass(frozen=True)
class ModelCatalogue:
    as_of: str
    recommended: str
    models: dict[str, ModelInfo]

    def find(self, model: str) -> ModelInfo | None:
        """The model by id or dated snapshot id; None for an id Anthropic does not list."""
        known = listed_id(model, self.models)
        return None if known is None else self.models[known]

    def capabilities(self, model: str) -> Capabilities:
        """The model's row, or what is safe to send to a model nobody described."""
        info = self.find(model)
        return UNKNOWN_MODEL if info is None else info.capabilities


# An unlisted model is asked in the plainest way: no thinking or effort parameters, no
# forced tool (auto works on every model), a max_tokens every model listed accepts, and
# files as text (no image or document blocks).
UNKNOWN_MODEL = Capabilities(
    context_window=200_000, max_output=32_000, thinking="off",
    thinking_refused=frozenset(), forced_tool_choice=False, min_cache_tokens=1024,
)


def _model(model_id: str, entry: dict[str, Any]) -> ModelInfo:
    effort = entry.get("effort") or {}
    vision = entry.get("vision") or {}
    return ModelInfo(
        model_id,
        str(entry["status"]),
        ModelPrice(
            input=entry["input"], output=entry["output"], cache_read=entry["cache_read"],
            cache_write=entry["cache_write"],
            bands=[PriceBand(**band) for band in entry.get("price_bands", [])],
        ),
        Capabilities(
            context_window=int(entry["context_window"]),
            max_output=int(entry["max_output"]),
            thinking=str(entry["thinking"]),
            thinking_refused=frozenset(entry["thinking_refused"]),
            forced_tool_choice=bool(entry["forced_tool_choice"]),
            min_cache_tokens=int(entry["min_cache_tokens"]),
            effort_levels=tuple(effort.get("levels", ())),
            effort_default=effort.get("default"),
            images=bool(vision.get("images_a_request")),
            pdfs=bool(vision.get("pdf_pages")),
            images_a_request=int(vision.get("images_a_request", 0)),
            pdf_pages=int(vision.get("pdf_pages", 0)),
        ),
        entry.get("retires"),
    )


def load_catalogue() -> ModelCatalogue:
    data = json.loads(resources.files("bridge.model").joinpath("models.json").read_text())
    models = {model_id: _model(model_id, entry) for model_id, entry in data["models"].items()}
    return ModelCatalogue(str(data["as_of"]), str(data["recommended"]), models)


CATALOGUE = load_catalogue()
DEFAULT_PRICES: dict[str, ModelPrice] = {m.id: m.price for m in CATALOGUE.models.values()}
