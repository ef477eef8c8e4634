"""PostgreSQL's words made as SQLite's FTS5 makes them: episodic migration 11 (issue 54).

So that both engines give an episode the same word score (pg_search.py computes FTS5's
BM25), PostgreSQL must see the same words. FTS5's ``porter unicode61 remove_diacritics
2`` splits at every character that is not one of its token characters (letters and
digits as its Unicode 6.1 tables have them, and every code point those tables leave
unassigned: 2017's emoji among them), folds case and diacritics, keeps every word (it
has no stop words) and stems those of 3 to 64 bytes by Porter's algorithm as written in
its C. PostgreSQL's ``english`` drops stop words, stems by Porter2 (another stem for
458 of the 8,332 words of LoCoMo's and REALTALK's development conversations) and reads
URLs, numbers and hyphenated words its own way.

``thoth_words`` splits at FTS5's own separators (``FTS5_TOKEN_CHARACTERS``, read from
FTS5: tests/integration/test_fts5_words.py reads them again), folds the letters FTS5 folds to
one ASCII letter, and stems by Snowball's ``porter`` with the three places where FTS5's C
departs from it: "-logi" -> "-log" and "-bli" -> "-ble" (Porter's own later
departures), a doubled consonant other than b d f g m n p r t undoubled before "-ed" and
"-ing", and "ies" -> "ie". Over 36,809 texts (the conversations, this repository's docs
and code) every word and every text's word count came out as FTS5's.

Frozen: this text is a shipped migration's; a change is a new migration.
"""

from __future__ import annotations

# The characters FTS5 (SQLite 3.40, unicode61) keeps in a word, as a regular
# expression's bracket contents (ranges of \u escapes).
FTS5_TOKEN_CHARACTERS = (
    r"0-9A-Za-z\u00aa\u00b2-\u00b3\u00b5\u00b9-\u00ba\u00bc-\u00be\u00c0-\u00d6"
    r"\u00d8-\u00f6\u00f8-\u02c1\u02c6-\u02d1\u02e0-\u02e4\u02ec\u02ee\u0300-\u0304"
    r"\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d-\u032e\u0330-\u0331\u0370-\u0374"
    r"\u0376-\u037d\u037f-\u0383\u0386\u0388-\u03f5\u03f7-\u0481\u048a-\u0559\u0560-\u0588"
    r"\u058b-\u058e\u0590\u05c8-\u05f2\u05f5-\u05ff\u0605\u061c-\u061d\u0620-\u064a"
    r"\u0660-\u0669\u066e-\u066f\u0671-\u06d3\u06d5\u06e5-\u06e6\u06ee-\u06fc\u06ff\u070e"
    r"\u0710\u0712-\u072f\u074b-\u07a5\u07b1-\u07ea\u07f4-\u07f5\u07fa-\u0815\u081a\u0824"
    r"\u0828\u082e-\u082f\u083f-\u0858\u085c-\u085d\u085f-\u08e3\u08ff\u0904-\u0939\u093d"
    r"\u0950\u0958-\u0961\u0966-\u096f\u0971-\u0980\u0984-\u09bb\u09bd\u09c5-\u09c6"
    r"\u09c9-\u09ca\u09ce-\u09d6\u09d8-\u09e1\u09e4-\u09f1\u09f4-\u09f9\u09fc-\u0a00"
    r"\u0a04-\u0a3b\u0a3d\u0a43-\u0a46\u0a49-\u0a4a\u0a4e-\u0a50\u0a52-\u0a6f\u0a72-\u0a74"
    r"\u0a76-\u0a80\u0a84-\u0abb\u0abd\u0ac6\u0aca\u0ace-\u0ae1\u0ae4-\u0aef\u0af2-\u0b00"
    r"\u0b04-\u0b3b\u0b3d\u0b45-\u0b46\u0b49-\u0b4a\u0b4e-\u0b55\u0b58-\u0b61\u0b64-\u0b6f"
    r"\u0b71-\u0b81\u0b83-\u0bbd\u0bc3-\u0bc5\u0bc9\u0bce-\u0bd6\u0bd8-\u0bf2\u0bfb-\u0c00"
    r"\u0c04-\u0c3d\u0c45\u0c49\u0c4e-\u0c54\u0c57-\u0c61\u0c64-\u0c7e\u0c80-\u0c81"
    r"\u0c84-\u0cbb\u0cbd\u0cc5\u0cc9\u0cce-\u0cd4\u0cd7-\u0ce1\u0ce4-\u0d01\u0d04-\u0d3d"
    r"\u0d45\u0d49\u0d4e-\u0d56\u0d58-\u0d61\u0d64-\u0d78\u0d7a-\u0d81\u0d84-\u0dc9"
    r"\u0dcb-\u0dce\u0dd5\u0dd7\u0de0-\u0df1\u0df5-\u0e30\u0e32-\u0e33\u0e3b-\u0e3e"
    r"\u0e40-\u0e46\u0e50-\u0e59\u0e5c-\u0eb0\u0eb2-\u0eb3\u0eba\u0ebd-\u0ec7\u0ece-\u0f00"
    r"\u0f20-\u0f33\u0f40-\u0f70\u0f88-\u0f8c\u0f98\u0fbd\u0fcd\u0fdb-\u102a\u103f-\u1049"
    r"\u1050-\u1055\u105a-\u105d\u1061\u1065-\u1066\u106e-\u1070\u1075-\u1081\u108e"
    r"\u1090-\u1099\u10a0-\u10fa\u10fc-\u135c\u1369-\u138f\u139a-\u13ff\u1401-\u166c"
    r"\u166f-\u167f\u1681-\u169a\u169d-\u16ea\u16ee-\u1711\u1715-\u1731\u1737-\u1751"
    r"\u1754-\u1771\u1774-\u17b3\u17d7\u17dc\u17de-\u17ff\u180f-\u18a8\u18aa-\u191f"
    r"\u192c-\u192f\u193c-\u193f\u1941-\u1943\u1946-\u19af\u19c1-\u19c7\u19ca-\u19dd"
    r"\u1a00-\u1a16\u1a1c-\u1a1d\u1a20-\u1a54\u1a5f\u1a7d-\u1a7e\u1a80-\u1a9f\u1aa7"
    r"\u1aae-\u1aff\u1b05-\u1b33\u1b45-\u1b59\u1b7d-\u1b7f\u1b83-\u1ba0\u1bae-\u1be5"
    r"\u1bf4-\u1bfb\u1c00-\u1c23\u1c38-\u1c3a\u1c40-\u1c7d\u1c80-\u1cbf\u1cc8-\u1ccf"
    r"\u1ce9-\u1cec\u1cee-\u1cf1\u1cf5-\u1dbf\u1de7-\u1dfb\u1e00-\u1fbc\u1fbe\u1fc2-\u1fcc"
    r"\u1fd0-\u1fdc\u1fe0-\u1fec\u1ff0-\u1ffc\u1fff\u2065-\u2069\u2070-\u2079\u207f-\u2089"
    r"\u208f-\u209f\u20ba-\u20cf\u20f1-\u20ff\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d"
    r"\u2124\u2126\u2128\u212a-\u212d\u212f-\u2139\u213c-\u213f\u2145-\u2149\u214e"
    r"\u2150-\u218f\u23f4-\u23ff\u2427-\u243f\u244b-\u249b\u24ea-\u24ff\u2700\u2776-\u2793"
    r"\u2b4d-\u2b4f\u2b5a-\u2ce4\u2ceb-\u2cee\u2cf2-\u2cf8\u2cfd\u2d00-\u2d6f\u2d71-\u2d7e"
    r"\u2d80-\u2ddf\u2e2f\u2e3c-\u2e7f\u2e9a\u2ef4-\u2eff\u2fd6-\u2fef\u2ffc-\u2fff"
    r"\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c\u3040-\u3098\u309d-\u309f"
    r"\u30a1-\u30fa\u30fc-\u318f\u3192-\u3195\u31a0-\u31bf\u31e4-\u31ff\u321f-\u3229"
    r"\u3248-\u324f\u3251-\u325f\u3280-\u3289\u32b1-\u32bf\u32ff\u3400-\u4dbf\u4e00-\ua48f"
    r"\ua4c7-\ua4fd\ua500-\ua60c\ua610-\ua66e\ua67f-\ua69e\ua6a0-\ua6ef\ua6f8-\ua6ff"
    r"\ua717-\ua71f\ua722-\ua788\ua78b-\ua801\ua803-\ua805\ua807-\ua80a\ua80c-\ua822"
    r"\ua82c-\ua835\ua83a-\ua873\ua878-\ua87f\ua882-\ua8b3\ua8c5-\ua8cd\ua8d0-\ua8df"
    r"\ua8f2-\ua8f7\ua8fb-\ua925\ua930-\ua946\ua954-\ua95e\ua960-\ua97f\ua984-\ua9b2"
    r"\ua9ce-\ua9dd\ua9e0-\uaa28\uaa37-\uaa42\uaa44-\uaa4b\uaa4e-\uaa5b\uaa60-\uaa76\uaa7a"
    r"\uaa7c-\uaaaf\uaab1\uaab5-\uaab6\uaab9-\uaabd\uaac0\uaac2-\uaadd\uaae0-\uaaea"
    r"\uaaf2-\uaaf4\uaaf7-\uabe2\uabee-\ud7ff\ue000-\ufb1d\ufb1f-\ufb28\ufb2a-\ufbb1"
    r"\ufbc2-\ufd3d\ufd40-\ufdfb\ufdfe-\ufdff\ufe1a-\ufe1f\ufe27-\ufe2f\ufe53\ufe67"
    r"\ufe6c-\ufefe\uff00\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uffdf\uffe7"
    r"\uffef-\ufff8\U00010000-\U000100ff\U00010103-\U00010136\U00010140-\U00010178"
    r"\U0001018a-\U0001018f\U0001019c-\U000101cf\U000101fe-\U0001039e\U000103a0-\U000103cf"
    r"\U000103d1-\U00010856\U00010858-\U0001091e\U00010920-\U0001093e\U00010940-\U00010a00"
    r"\U00010a04\U00010a07-\U00010a0b\U00010a10-\U00010a37\U00010a3b-\U00010a3e"
    r"\U00010a40-\U00010a4f\U00010a59-\U00010a7e\U00010a80-\U00010b38\U00010b40-\U00010fff"
    r"\U00011003-\U00011037\U0001104e-\U0001107f\U00011083-\U000110af\U000110c2-\U000110ff"
    r"\U00011103-\U00011126\U00011135-\U0001113f\U00011144-\U0001117f\U00011183-\U000111b2"
    r"\U000111c1-\U000111c4\U000111c9-\U000116aa\U000116b8-\U0001246f\U00012474-\U00016f50"
    r"\U00016f7f-\U00016f8e\U00016f93-\U0001cfff\U0001d0f6-\U0001d0ff\U0001d127-\U0001d128"
    r"\U0001d1de-\U0001d1ff\U0001d246-\U0001d2ff\U0001d357-\U0001d6c0\U0001d6c2-\U0001d6da"
    r"\U0001d6dc-\U0001d6fa\U0001d6fc-\U0001d714\U0001d716-\U0001d734\U0001d736-\U0001d74e"
    r"\U0001d750-\U0001d76e\U0001d770-\U0001d788\U0001d78a-\U0001d7a8\U0001d7aa-\U0001d7c2"
    r"\U0001d7c4-\U0001eeef\U0001eef2-\U0001efff\U0001f02c-\U0001f02f\U0001f094-\U0001f09f"
    r"\U0001f0af-\U0001f0b0\U0001f0bf-\U0001f0c0\U0001f0d0\U0001f0e0-\U0001f10f\U0001f12f"
    r"\U0001f16c-\U0001f16f\U0001f19b-\U0001f1e5\U0001f203-\U0001f20f\U0001f23b-\U0001f23f"
    r"\U0001f249-\U0001f24f\U0001f252-\U0001f2ff\U0001f321-\U0001f32f\U0001f336"
    r"\U0001f37d-\U0001f37f\U0001f394-\U0001f39f\U0001f3c5\U0001f3cb-\U0001f3df"
    r"\U0001f3f1-\U0001f3ff\U0001f43f\U0001f441\U0001f4f8\U0001f4fd-\U0001f4ff"
    r"\U0001f53e-\U0001f53f\U0001f544-\U0001f54f\U0001f568-\U0001f5fa\U0001f641-\U0001f644"
    r"\U0001f650-\U0001f67f\U0001f6c6-\U0001f6ff\U0001f774-\U000e0000\U000e0002-\U000e001f"
    r"\U000e0080-\U000e00ff\U000e01f0-\U0010ffff"
)
# Letters FTS5 folds to one ASCII letter (remove_diacritics 2), and what they become.
FOLDED_FROM = (
    "ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆ"
    "ćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐő"
    "ŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚ"
    "ǛǜǞǟǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰ"
    "ȱȲȳ"
)
FOLDED_TO = (
    "aaaaaaceeeeiiiinooooouuuuyaaaaaaceeeeiiiinooooouuuuyyaaaaaac"
    "cccccccddeeeeeeeeeegggggggghhiiiiiiiiijjkkllllllnnnnnnoooooo"
    "rrrrrrssssssssttttuuuuuuuuuuuuwwyyyzzzzzzsoouuaaiioouuuuuuuu"
    "uuaaggkkoooojggnnaaaaaaeeeeiiiioooorrrruuuusstthhaaeeooooooo"
    "oyy"
)
# Combining marks FTS5 keeps in a word, and then removes (a decomposed "é").
REMOVED_MARKS = (
    "\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030f"
    "\u0311\u031b\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"
)

# The text, ASCII as it is (the fold is slow: 117 us a turn), lower-cased and split.
_WORDS_OF_BODY = (
    "regexp_split_to_table(lower(CASE WHEN octet_length(body) = length(body) THEN body"
    f" ELSE translate(body, '{FOLDED_FROM}{REMOVED_MARKS}', '{FOLDED_TO}') END),"
    f" '[^{FTS5_TOKEN_CHARACTERS}]+')"
)

FTS5_WORDS_POSTGRES = f"""
    CREATE TEXT SEARCH DICTIONARY thoth_porter (TEMPLATE = snowball, Language = porter);
    -- The text's words, stemmed, each at a position of its own (BM25 counts them).
    -- Positions past tsvector's last, 16,383, share it, and a word keeps at most 256:
    -- a text that long counts fewer. (One function, no nested ones: a nested SQL
    -- function is planned again at every call, four times slower.)
    -- The search path is fixed at creation (FROM CURRENT) because the generated column
    -- calls it wherever a row is written: a restore (pg_dump sets an empty path) or a
    -- role with another path must still find thoth_porter.
    CREATE FUNCTION thoth_words(body text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path FROM CURRENT AS $$
        SELECT coalesce(string_agg('''' || CASE
            WHEN octet_length(word) NOT BETWEEN 3 AND 64 THEN word
            WHEN word = 'ies' THEN 'ie'
            WHEN (word LIKE '%ed' OR word LIKE '%ing')
                 AND word ~ '[aeiouy].*([chjkqvwx])\\1(ed|ing)$'
                THEN (ts_lexize('thoth_porter',
                                regexp_replace(word, '([chjkqvwx])\\1(ed|ing)$', '\\1')))[1]
            WHEN stem LIKE '%logi' AND left(stem, -4) ~ '[aeiouy][^aeiouy]'
                THEN left(stem, -1)
            WHEN stem LIKE '%bli' AND stem NOT LIKE '%abli'
                 AND left(stem, -3) ~ '[aeiouy][^aeiouy]'
                THEN (ts_lexize('thoth_porter', left(stem, -1) || 'e'))[1]
            ELSE stem END || ''':' || least(position, 16383), ' ')::tsvector, ''::tsvector)
        FROM {_WORDS_OF_BODY} WITH ORDINALITY AS words (word, position),
            LATERAL (SELECT coalesce((ts_lexize('thoth_porter', word))[1], word) AS stem)
                AS stemmed
        -- A tsvector refuses a word over 2,046 bytes (a pasted hash, a run of emoji): it
        -- is not searched, and still counted in the length as FTS5 counts it.
        WHERE word <> '' AND octet_length(word) <= 2046
    $$;
    -- BM25's length of an episode: its words, counted as FTS5 counts them.
    CREATE FUNCTION thoth_word_count(body text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT count(*)::integer FROM {_WORDS_OF_BODY} AS word WHERE word <> ''
    $$;
    ALTER TABLE episodes DROP COLUMN search;
    ALTER TABLE episodes ADD COLUMN search TSVECTOR GENERATED ALWAYS AS (
        setweight(thoth_words(coalesce(user_name, '') || ' ' || user_text || ' ' || summary),
                  'A')
        || setweight(thoth_words(files_text), 'B')
        || setweight(thoth_words(turn_before), 'D')) STORED;
    ALTER TABLE episodes ADD COLUMN search_tokens INTEGER GENERATED ALWAYS AS (
        thoth_word_count(coalesce(user_name, '') || ' ' || user_text || ' ' || summary
                         || ' ' || files_text || ' ' || turn_before)) STORED;
    CREATE INDEX episodes_search ON episodes USING gin (search);
    DELETE FROM episode_words;
    INSERT INTO episode_words (lexeme, episodes)
        SELECT lexeme, count(*) FROM episodes, unnest(tsvector_to_array(search)) AS lexeme
        GROUP BY lexeme;
"""
