"""The names people call each other by, read from what they say.

People in a chat are asked about by the names they go by, which are often not the names
their accounts show: REALTALK's "Emi" is "Kate" to the person she talks with, LoCoMo's
"Melanie" is "Mel". The conversation says so itself: "I'm Kate" names the one who says
it, and a name said to someone ("Hey Kate!", "what do you think, Kate?") names the person
spoken to, the last other person who spoke in the thread. Each such naming is kept with
its episode (episodic migration 10), so it is forgotten with it; recall counts them in
the place a question is asked (``EpisodeStore.people_called``).

Only shapes that are nearly always a name are read: an introduction, a greeting or thanks
followed by a capitalised word, and a capitalised word set off at the end of a sentence
after "you" or a comma. "I'm Italian" or "I love Miami!" can still slip through; recall
takes a name only when most of its namings point to one person (``called_most``).
"""

from __future__ import annotations

import re

from layers.episodic.named_people import is_common_word

_NAME = r"([A-Z][a-z\u00e0-\u00ff]+(?:-[A-Z][a-z]+)?)"
# Greeting, thanks or farewell words, before a name said to someone.
_GREETING = (r"(?i:hi|hey|heya|hiya|hello|yo|morning|good\s+morning|evening|good\s+evening"
             r"|night|good\s+night|goodnight|bye|goodbye|thanks|thank\s+you|thx|dear"
             r"|congrats|congratulations|welcome|sorry|cheers|love\s+you|miss\s+you"
             r"|see\s+you|take\s+care)")
_INTRODUCED = re.compile(r"\b(?i:i'm|i\s+am|i’m|my\s+name\s+is|my\s+name's|call\s+me)\s+"
                         + _NAME + r"\b(?!\s+[A-Z])")
_SAID_TO = (
    re.compile(r"\b" + _GREETING + r"[,!.]?\s+" + _NAME + r"\b"),
    # "..., Kate!" / "..., Kate?" at the end of a sentence.
    re.compile(r",\s*" + _NAME + r"\s*[!?.]*\s*$"),
    # "How are you doing today Kate?" / "Thank you so much Kate!": no comma, after "you"
    # or a word of when (not "what do you think Paris?").
    re.compile(r"\b(?i:you|u|too|today|tonight)\s+" + _NAME + r"\s*[!?.]+\s*$"),
    # "Kate, did you..." / "Kate!" opening a message.
    re.compile(r"^" + _NAME + r"\s*[,!]"),
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def introduced_as(text: str) -> list[str]:
    """The names the speaker gives themselves ("I'm Kate", "call me Mel"), lowercased."""
    return [name.lower() for name in _INTRODUCED.findall(text) if not is_common_word(name)]


def said_to(text: str) -> list[str]:
    """The names said to someone in ``text`` ("Hey Kate", "right, Mel?"), lowercased."""
    names: list[str] = []
    for sentence in _SENTENCES.split(text):
        for shape in _SAID_TO:
            for name in shape.findall(sentence.strip()):
                lowered = name.lower()
                if not is_common_word(name) and lowered not in names:
                    names.append(lowered)
    return names


def called_most(counts: dict[str, int], *, at_least: int = 3,
                share: float = 0.7) -> str | None:
    """Who a name means, from how often it named each person: the one named by at least
    ``at_least`` of its namings and ``share`` of them, else nobody."""
    if not counts:
        return None
    person, most = max(counts.items(), key=lambda item: (item[1], item[0]))
    if most < at_least or most < share * sum(counts.values()):
        return None
    return person
