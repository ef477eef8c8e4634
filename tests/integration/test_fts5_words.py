"""PostgreSQL's words are FTS5's (layers/episodic/fts5_words.py, episodic migration 11): the
same split, fold and stems, read from FTS5 itself on the SQLite this process links."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Sequence

from layers.episodic.fts5_words import FTS5_TOKEN_CHARACTERS
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.storage.engines import connect_postgres
from tests.postgres import PostgresForTests

# Each where FTS5's tokenizer or its Porter departs from PostgreSQL's english or Snowball's
# porter: short words, diacritics (composed and combining), "-logy", "-bly", a doubled k,
# "ies", apostrophes, numbers, URLs, hyphens, emoji FTS5's Unicode 6.1 does not know,
# other scripts, and a word too long to stem.
TEXTS = [
    "Is it us or them? As the vs. of CS, HS and MS goes",
    "Café béchamel, sautéed at Sacsayhuamán; naïve façade, cafe\u0301 and Ærø",
    "psychology, technologies, analogy, ecology and mythology",
    "incredibly, forcibly, terribly, possibly, capably, ably and probably",
    "trekking, trekked, revved, quizzed and hopping; the ies of series",
    "Don't you think it's John's? 3.5 km, 1,000 people, v2.0.1 and 20mins",
    "see https://example.com/a-b_c?d=e#f or mail jo.ann@example.org; well-known co-op",
    "so calm 🧘\u200d♀️ 🤙 🤷 😀 ❤️ and 🏻 skin",
    "Ελληνικά, русский текст, 日本語のテキスト, עברית",
    "supercalifragilisticexpialidociousnessesandmoreandmoreandmoreandmorewords end",
    "SHOUTING LOUDLY ABOUT GENERALIZATIONS, RATIONALIZATIONS and relational ones",
]


def test_the_token_characters_are_those_fts5_keeps_in_a_word() -> None:
    kept = _ranges_of(FTS5_TOKEN_CHARACTERS)
    code_points = [c for c in range(1, 0x30000) if not 0xD800 <= c <= 0xDFFF]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5 (x,"
               " tokenize = 'unicode61 remove_diacritics 2')")
    # Between two letters a token character makes one word, a separator two.
    db.executemany("INSERT INTO f (rowid, x) VALUES (?, ?)",
                   [(c, f"q{chr(c)}q") for c in code_points])
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (f, instance)")
    words = Counter(doc for (doc,) in db.execute("SELECT doc FROM v"))
    fts5 = {c for c in code_points if words[c] == 1}
    ours = {c for low, high in kept for c in range(low, high + 1)} & set(code_points)
    assert ours == fts5, sorted(ours ^ fts5)[:20]


def test_postgresql_makes_the_words_fts5_makes(postgres: PostgresForTests) -> None:
    db = connect_postgres(postgres.fresh_database(), schemas=LAYER_SCHEMAS)
    with db.read() as conn:
        ours = [(str(row[0]), int(row[1])) for row in conn.execute(
            "SELECT thoth_words(text)::text, thoth_word_count(text)"
            " FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS texts (text, n) ORDER BY n",
            (TEXTS,)).fetchall()]
    db.close()
    theirs = _fts5_words(TEXTS)
    for text, (vector, counted), words in zip(TEXTS, ours, theirs, strict=True):
        found = Counter({match[1]: len(match[2].split(","))
                         for match in re.finditer(r"'([^']*)':([0-9,]+)", vector)})
        assert found == words, text
        assert counted == sum(words.values()), text
    # The stems that differ from PostgreSQL's own english and from Snowball's porter.
    assert {"us", "ie", "psycholog", "technolog", "incred", "trek", "cafe", "bechamel"} <= set(
        word for words in theirs for word in words)


def _fts5_words(texts: Sequence[str]) -> list[Counter[str]]:
    """Each text's words and how often each occurs, as FTS5 indexes them."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5 (x,"
               " tokenize = 'porter unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO f (rowid, x) VALUES (?, ?)",
                   [(index + 1, text) for index, text in enumerate(texts)])
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (f, instance)")
    words: list[Counter[str]] = [Counter() for _ in texts]
    for term, doc in db.execute("SELECT term, doc FROM v"):
        words[int(doc) - 1][str(term)] += 1
    return words


def _ranges_of(bracket: str) -> list[tuple[int, int]]:
    """A bracket expression's ranges (characters and \\u / \\U escapes) as code points."""
    one = r"(\\u[0-9a-f]{4}|\\U[0-9a-f]{8}|[^\\-])"
    ranges = []
    for low, high in re.findall(f"{one}(?:-{one})?", bracket):
        ranges.append((_code_point(low), _code_point(high or low)))
    assert ranges, "no range read"
    return ranges


def _code_point(text: str) -> int:
    return int(text[2:], 16) if text.startswith("\\") else ord(text)



def test_the_words_are_made_whatever_search_path_writes_the_row(
    postgres: PostgresForTests,
) -> None:
    """A restore (pg_dump empties the search path) or a role with another path writes
    rows whose generated words call thoth_porter: it is found all the same."""
    db = connect_postgres(postgres.fresh_database(), schemas=LAYER_SCHEMAS)
    with db.write() as conn:
        conn.execute("SET LOCAL search_path = ''")
        vector = conn.execute("SELECT public.thoth_words('running dogs')::text").fetchone()[0]
    db.close()
    assert vector == "'dog':2 'run':1"
