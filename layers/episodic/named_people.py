"""People a question names, matched against who said each candidate turn.

"What did Dana say about the deploy?" is most often answered by Dana's own turns. The
words taken as names are the capitalised ones (a Slack question names people as they
are written: Dana, Ari), less the words a sentence starts with anyway — question words
and pronouns — and a possessive's "'s". No model, no name list: a candidate's speaker
is read from its episode, so a name nobody in the candidates has changes nothing.
"""

from __future__ import annotations

import calendar
import re

# A word of letters (any script: Élodie, Łukasz), kept when it is written capitalised.
_WORD = re.compile(r"\b([^\W\d_][\w'’-]*)")
# Capitalised at a sentence's start whatever they mean: never taken as a name.
_NOT_NAMES = frozenset((
    # Months and days are capitalised too, and are dates (named_dates.py).
    *(month.lower() for month in calendar.month_name if month),
    *(day.lower() for day in calendar.day_name),
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "how", "i", "if",
    "in", "is", "it", "its", "may", "me", "might", "my", "no", "not", "of", "on", "or",
    "our", "she", "should", "so", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "to", "was", "we", "were", "what", "when", "where", "which",
    "who", "whom", "whose", "why", "will", "with", "would", "yes", "you", "your",
))
# Said to someone or at a sentence's end where a name could be, and never one
# (called_names.py): interjections, and the words for a group or anyone at all.
_SAID_LIKE_NAMES = frozenset((
    "absolutely", "again", "all", "also", "amazing", "awesome", "bro", "buddy", "cool",
    "definitely", "dude", "everybody", "everyone", "exactly", "folks", "friend", "girl",
    "great", "guys", "haha", "hmm", "indeed", "later", "lol", "man", "mate", "nice", "no",
    "nope", "ok", "okay", "oh", "omg", "please", "right", "sir", "soon", "sure", "team",
    "today", "tomorrow", "tonight", "too", "well", "wow", "yeah", "yesterday", "yup",
    "good", "morning", "night", "evening", "thanks", "there", "here", "love",
    # Opening a sentence before a comma, as a name may ("Kate, did you...").
    "actually", "alright", "anyway", "basically", "besides", "btw", "certainly", "finally",
    "first", "hello", "hey", "hi", "honestly", "hopefully", "however", "instead", "kk",
    "lately", "luckily", "meanwhile", "now", "otherwise", "overall", "personally", "plus",
    "recently", "remember", "sadly", "seriously", "speaking", "still", "ultimately",
    "unfortunately", "wait", "yet",
))


def named_in(question: str) -> frozenset[str]:
    """The lowercased names a question holds (possessives stripped)."""
    found = set()
    for word in _WORD.findall(question):
        if not word[0].isupper():
            continue
        name = re.sub(r"['’]s$", "", word).strip("'’-").lower()
        if name and name not in _NOT_NAMES:
            found.add(name)
    return frozenset(found)


def is_common_word(word: str) -> bool:
    """Whether a capitalised word is one that is never a person's name."""
    lowered = word.lower()
    return lowered in _NOT_NAMES or lowered in _SAID_LIKE_NAMES


def first_name(speaker: str | None) -> str | None:
    """How a question would name this speaker: the first word of their name."""
    if not speaker:
        return None
    words = speaker.split()
    return words[0].lower() if words else None
