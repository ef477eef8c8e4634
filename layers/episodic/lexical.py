"""Turn free text into an FTS5 MATCH expression.

Every word is quoted (so FTS5 operators and punctuation in user text are inert)
and the words are OR-ed: BM25 then ranks episodes sharing more and rarer words
higher. Function words are dropped because they match nearly every episode and
only slow the search down.
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


def match_expression(text: str) -> str | None:
    """An FTS5 query OR-ing the content words of ``text``; None if it has none."""
    words: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS or word in seen:
            continue
        seen.add(word)
        words.append(f'"{word}"')
    return " OR ".join(words) if words else None
