"""Prices: exact names, dated model ids, unknown models charged as the dearest."""

from __future__ import annotations

from bridge.model.pricing import DEFAULT_PRICES, Usage, price_of


def test_a_dated_model_id_takes_its_family_price() -> None:
    assert price_of("claude-haiku-4-5-20251001", DEFAULT_PRICES) == DEFAULT_PRICES[
        "claude-haiku-4-5"
    ]


def test_an_unknown_model_is_charged_as_the_dearest() -> None:
    dearest = max(DEFAULT_PRICES.values(), key=lambda p: p.output)
    assert price_of("claude-unknown-9", DEFAULT_PRICES) == dearest


def test_usage_adds_up_and_costs_per_million() -> None:
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40)
    assert total == Usage(11, 22, 33, 44)
    price = DEFAULT_PRICES["claude-sonnet-4-6"]
    assert price.cost(Usage(input_tokens=1_000_000)) == 3
    assert price.cost(Usage(output_tokens=1_000_000)) == 15


def test_the_catalogue_is_dated_recommends_a_current_model_and_prices_it() -> None:
    from bridge.model.pricing import CATALOGUE
    from bridge.settings import Settings

    assert CATALOGUE.as_of and CATALOGUE.recommended in CATALOGUE.models
    assert CATALOGUE.models[CATALOGUE.recommended].status == "current"
    assert Settings(_env_file=None).thoth_model == CATALOGUE.recommended  # type: ignore[call-arg]
    assert CATALOGUE.find("claude-sonnet-4-6").status == "legacy"  # type: ignore[union-attr]
    # Current models are priced as listed, not as the dearest (the cap no longer trips early).
    dearest = max(DEFAULT_PRICES.values(), key=lambda p: p.output)
    assert price_of("claude-sonnet-5-5", DEFAULT_PRICES) != dearest
