"""Prices and the catalogue: exact names, dated model ids, unknown models charged as the
dearest, price bands, and each model's capabilities."""

from __future__ import annotations

from bridge.model.catalogue import DEFAULT_PRICES
from bridge.model.pricing import Usage, price_of


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
    from bridge.model.catalogue import CATALOGUE
    from bridge.settings import Settings

    assert CATALOGUE.as_of and CATALOGUE.recommended in CATALOGUE.models
    assert CATALOGUE.models[CATALOGUE.recommended].status == "current"
    assert Settings(_env_file=None).thoth_model == CATALOGUE.recommended  # type: ignore[call-arg]
    assert CATALOGUE.find("claude-sonnet-4-6").status == "legacy"  # type: ignore[union-attr]
    # Current models are priced as listed, not as the dearest (the cap no longer trips early).
    dearest = max(DEFAULT_PRICES.values(), key=lambda p: p.output)
    assert price_of("claude-sonnet-5-5", DEFAULT_PRICES) != dearest


def test_an_unlisted_id_is_unknown_not_its_older_neighbour() -> None:
    from bridge.model.catalogue import CATALOGUE

    fable_5_2 = CATALOGUE.find("claude-fable-5-2")
    assert fable_5_2 is not None and fable_5_2.id == "claude-fable-5-2"
    assert fable_5_2.price.input == 8 and fable_5_2.capabilities.forced_tool_choice is False
    assert CATALOGUE.find("claude-fable-5-3") is None
    assert CATALOGUE.find("claude-opus-5-5-20261001").id == "claude-opus-5-5"  # type: ignore[union-attr]
    dearest = max(DEFAULT_PRICES.values(), key=lambda p: p.output)
    assert price_of("claude-fable-5-3", DEFAULT_PRICES) == dearest
    unknown = CATALOGUE.capabilities("claude-fable-5-3")
    assert not unknown.thinks and not unknown.forced_tool_choice and not unknown.effort_levels


def test_haiku_5_5_costs_five_times_as_much_past_100k_prompt_tokens() -> None:
    price = DEFAULT_PRICES["claude-haiku-5-5"]
    short = Usage(input_tokens=60_000, output_tokens=1_000, cache_read_tokens=40_000)
    long = Usage(input_tokens=60_001, output_tokens=1_000, cache_read_tokens=40_000)
    assert short.prompt_tokens == 100_000
    assert price.cost(short) == (60_000 * 0.1 + 1_000 * 0.5 + 40_000 * 0.01) / 1e6
    assert price.cost(long) == 5 * (60_001 * 0.1 + 1_000 * 0.5 + 40_000 * 0.01) / 1e6
    assert DEFAULT_PRICES["claude-opus-5-5"].cost(long) == (
        60_001 * 4 + 1_000 * 20 + 40_000 * 0.2) / 1e6  # one band for one model only


def test_effort_falls_to_the_nearest_level_a_model_has_and_max_tokens_fits_thinking() -> None:
    from bridge.model.catalogue import CATALOGUE
    from bridge.model.output_budget import REPLY_TOKENS, max_tokens_for

    opus_4_6 = CATALOGUE.capabilities("claude-opus-4-6")
    assert opus_4_6.effort_for("xhigh") == "high" and opus_4_6.effort_for("max") == "max"
    assert CATALOGUE.capabilities("claude-haiku-4-5").effort_for("high") is None
    assert max_tokens_for(CATALOGUE.capabilities("claude-opus-5-5"), "medium",
                          REPLY_TOKENS) == 16_000
    assert max_tokens_for(opus_4_6, "medium", REPLY_TOKENS) == REPLY_TOKENS  # no thinking
    assert max_tokens_for(CATALOGUE.capabilities("claude-opus-4-5"), "max", 200_000) == 64_000


def test_no_model_that_thinks_by_default_is_sent_a_forced_tool() -> None:
    from bridge.model.catalogue import CATALOGUE

    # Forcing a tool is incompatible with thinking: a model that thinks unless told not to
    # is asked for the tool in words.
    for info in CATALOGUE.models.values():
        assert not (info.capabilities.thinks and info.capabilities.forced_tool_choice), info.id
