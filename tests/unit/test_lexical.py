from layers.episodic.lexical import affordable_terms, content_words, match_expression


def test_content_words_drop_stopwords_punctuation_and_repeats() -> None:
    assert content_words("What did Caroline say about the LGBTQ support group? Caroline!") == [
        "caroline",
        "say",
        "lgbtq",
        "support",
        "group",
    ]


def test_match_expression_quotes_words_so_fts_operators_are_inert() -> None:
    assert match_expression(["near", "or", "x"]) == '"near" OR "or" OR "x"'
    assert match_expression([]) is None


def test_affordable_terms_keep_the_rarest_words_within_budget() -> None:
    counts = {"the-common": 90_000, "rare": 12, "medium": 8_000, "missing": 0, "big": 15_000}
    assert affordable_terms(counts, budget=20_000) == ["rare", "medium"]
    assert affordable_terms(counts, budget=10) == []
    assert affordable_terms({"a": 5, "b": 7}, budget=20_000) == ["a", "b"]
