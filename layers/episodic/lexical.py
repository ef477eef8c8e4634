"""Turn free text into an FTS5 MATCH expression.

Every word is quoted (so FTS5 operators and punctuation in user text are inert)
and the words are OR-ed: BM25 then ranks episodes sharing more and rarer words
higher. Function words are dropped because they match nearly every episode.

FTS5 scores every episode that matches any word before it can sort, so a common
word makes a large store slow. ``affordable_terms`` keeps the rarest words whose
matches add up to a budget: the words BM25 weighs most. What the common words
would have found, the vector search still finds by meaning.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves s t don ll re ve d m o y
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


# BM25 costs about a microsecond per matching episode. This leaves small stores
# (LoCoMo) untouched and bounds the lexical half of a recall to 2-4 ms at any size.
MATCH_BUDGET = 2_000


def content_words(text: str) -> list[str]:
    """The distinct non-stopwords of ``text``, lower-cased, in order."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and word not in words:
            words.append(word)
    return words


def affordable_terms(document_counts: dict[str, int], budget: int = MATCH_BUDGET) -> list[str]:
    """The rarest words whose episode counts sum to at most ``budget``; absent words dropped."""
    chosen: list[str] = []
    spent = 0
    for word, count in sorted(document_counts.items(), key=lambda item: item[1]):
        if count == 0:
            continue
        if spent + count > budget:
            break
        chosen.append(word)
        spent += count
    return chosen


# The columns of an episode's own words (not the turn before's: tables.py, migration 6),
# its files' among them (migration 9).
_OWN_COLUMNS = "{user_name user_text summary files_text}"


def match_expression(words: list[str], *, with_turn_before: bool = True) -> str | None:
    """An FTS5 query OR-ing ``words``, each quoted, in the episode's own words and (unless
    told not to) the turn before's; None if there are none."""
    if not words:
        return None
    any_word = " OR ".join(f'"{word}"' for word in words)
    return any_word if with_turn_before else f"{_OWN_COLUMNS} : ({any_word})"
