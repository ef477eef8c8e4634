"""What a person says about themselves, as observations (rule-based, no model).

Only first-person statements in the person's own message count: preferences,
constraints, facts about themselves, requests about how to work with them, and
corrections. Questions, hypotheticals and the agent's words never become facts.
Each observation has a *slot* when it can only have one current value (a
timezone, a preference for or against one thing): a newer statement in the same
slot supersedes the older one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MAX_OBJECT_WORDS = 12


@dataclass(frozen=True)
class Statement:
    text: str  # third person: "prefers short answers"
    slot: str | None  # statements in the same slot replace each other


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CORRECTION = re.compile(r"^(actually|correction|no|sorry|wait)\b[,:]?\s*", re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^(who|what|when|where|why|how|which|do|does|did|is|are|was|were|can|could|would|"
    r"should|will|shall|may|might)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"^(if|unless|suppose|imagine|say)\b|\b(maybe|perhaps|probably)\b", re.IGNORECASE
)
# About this moment, not about the person: "I'm out today", "my laptop is broken now".
_TRANSIENT = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|now|right now|this (morning|afternoon|evening|week"
    r"|month)|at the moment|currently|for now|sometimes|weekends?|for a bit|later)\b",
    re.IGNORECASE,
)
# Never store these as facts, whatever the redactor makes of the value.
_SECRET_WORDS = re.compile(
    r"\b(password|passcode|passphrase|pin|token|secret|api key|key|ssn|social security|"
    r"credit card|card number|cvv|iban|otp)\b",
    re.IGNORECASE,
)
# "Forget that I live in Berlin" is a request to forget, not a new fact.
_FORGET = re.compile(r"^(please )?(forget|stop remembering|don't remember|do not remember)\b",
                     re.IGNORECASE)
# A standing request is about how Thoth talks to this person, not a one-off command.
_ABOUT_REPLIES = re.compile(
    r"\b(me|my|answer|answers|reply|replies|respond|emoji|emojis|bullet|bullets|format|"
    r"tag|ping|page|dm|message|messages|summar\w*|explain\w*|jargon|english|language|"
    r"tone|formal|casual|long|short|detail\w*)\b",
    re.IGNORECASE,
)
_DEMONSTRATIVE = re.compile(r"^(this|that|it|these|those|them)\b", re.IGNORECASE)
_QUOTE_OR_CODE = re.compile(r"```.*?```|`[^`]*`|^>.*$", re.DOTALL | re.MULTILINE)
_FILLER = re.compile(r"^(sure|fine|ok|okay|good|great|sorry|glad|happy|not sure|afraid|going|"
                     r"trying|about|back|here|done|ready|on it|thinking|wondering|curious)\b",
                     re.IGNORECASE)

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], Statement | None]]


_PRONOUNS = {"me": "them", "my": "their", "i": "they", "myself": "themselves", "mine": "theirs"}


def _object(text: str) -> str:
    """The statement's object, in the third person, at most a dozen words."""
    words = text.strip(" .,!;:\"'").split()[:MAX_OBJECT_WORDS]
    return " ".join(_PRONOUNS.get(word.lower(), word) for word in words)


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower())[:4])


def _topic(thing: str) -> str:
    """A preference's topic: its head noun ("short answers" and "detailed answers" meet)."""
    words = re.findall(r"[a-z0-9]+", thing.lower())
    return words[-1] if words else ""


_CLAUSE = re.compile(r",|\b(if|when|unless|because|but|so that|as long as)\b", re.IGNORECASE)


def _thing(text: str) -> str:
    """What a preference is about, without its condition ("... if possible")."""
    return _object(_CLAUSE.split(text, maxsplit=1)[0])


def _likes(match: re.Match[str]) -> Statement | None:
    thing = _thing(match.group("thing"))
    if not thing or _DEMONSTRATIVE.match(thing):
        return None
    return Statement(f"prefers {thing}", f"pref:{_topic(thing)}")


def _dislikes(match: re.Match[str]) -> Statement | None:
    thing = _thing(match.group("thing"))
    if not thing or _DEMONSTRATIVE.match(thing):
        return None
    return Statement(f"does not like {thing}", f"pref:{_topic(thing)}")


def _mine(match: re.Match[str]) -> Statement | None:
    attribute, value = match.group("attr").lower(), _object(match.group("value"))
    if not value:
        return None
    return Statement(f"their {attribute} is {value}", f"my:{attribute}")


def _location(match: re.Match[str]) -> Statement | None:
    place = _object(match.group("place"))
    return Statement(f"is based in {place}", "location") if place else None


def _works(match: re.Match[str]) -> Statement | None:
    preposition, what = match.group("prep").lower(), _object(match.group("what"))
    return Statement(f"works {preposition} {what}", f"work:{preposition}") if what else None


def _called(match: re.Match[str]) -> Statement | None:
    name = _object(match.group("name"))
    return Statement(f"wants to be called {name}", "name") if name else None


def _is(match: re.Match[str]) -> Statement | None:
    what = _object(match.group("what"))
    first = what.split()[0].lower() if what else ""
    # "I'm seeing a 500", "I'm looking into it": what they are doing, not who they are.
    if not what or _FILLER.match(what) or first.endswith("ing"):
        return None
    return Statement(f"is {what}", None)


def _cannot(match: re.Match[str]) -> Statement | None:
    what = _object(match.group("what"))
    return Statement(f"cannot {what}", f"can:{_key(what)}") if what else None


def _request(match: re.Match[str]) -> Statement | None:
    how = match.group("how").lower()
    what = _object(match.group("what"))
    if not what:
        return None
    if not _ABOUT_REPLIES.search(what):
        return None
    verb = {"always": "always", "never": "never", "don't": "not", "do not": "not"}[how]
    text = f"asks Thoth to {verb} {what}".replace("to not", "not to")
    return Statement(text, f"ask:{_key(what)}")


_RULES: tuple[Rule, ...] = (
    # "Remember that …" is about the work, not the person: reflection makes it a note.
    (re.compile(r"^(please )?remember (that )?(?P<what>.+)", re.I), lambda _: None),
    (re.compile(r"^(please )?(?P<how>always|never|don't|do not) (?P<what>.+)", re.I), _request),
    (re.compile(r"\bi (really |much |strongly )?(prefer|like|love|enjoy) (?P<thing>.+)", re.I),
     _likes),
    (re.compile(r"\bi (really )?(hate|dislike|can't stand|don't like|do not like) "
                r"(?P<thing>.+)", re.I), _dislikes),
    (re.compile(r"\bmy (?P<attr>[a-z]+( [a-z]+)?) (is|are) (?P<value>.+)", re.I), _mine),
    (re.compile(r"\bi(?:'m| am) (based|located|living) in (?P<place>.+)", re.I), _location),
    (re.compile(r"\bi live in (?P<place>.+)", re.I), _location),
    (re.compile(r"\bi work (?P<prep>on|at|in|as|for) (?P<what>.+)", re.I), _works),
    (re.compile(r"^(please )?call me (?P<name>[A-Z][\w'-]*( [A-Z][\w'-]*)?)[.!]?$"), _called),
    (re.compile(r"\bi (can't|cannot|can not|won't be able to) (?P<what>.+)", re.I), _cannot),
    (re.compile(r"^i(?:'m| am) (?:an? |the )?(?P<what>.+)", re.I), _is),
)


def extract(message: str) -> list[Statement]:
    """The observations in one message the person wrote, in order, without repeats."""
    found: list[Statement] = []
    # Quoted lines (often the agent's own words) and code are not the person speaking.
    for raw in _SENTENCE.split(_QUOTE_OR_CODE.sub(" ", message)):
        sentence = _CORRECTION.sub("", raw.strip())
        if not sentence or _skipped(sentence):
            continue
        for pattern, build in _RULES:
            match = pattern.search(sentence)
            if match is None:
                continue
            statement = build(match)
            if statement is not None and statement not in found:
                found.append(statement)
            break
    return found


def _skipped(sentence: str) -> bool:
    return (
        _is_question(sentence)
        or bool(_HYPOTHETICAL.search(sentence))
        or bool(_TRANSIENT.search(sentence))
        or bool(_SECRET_WORDS.search(sentence))
        or bool(_FORGET.match(sentence))
    )


def _is_question(sentence: str) -> bool:
    if re.match(r"^(do not|don't)\b", sentence, re.IGNORECASE):
        return False  # "Do not use emojis." is a request
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))


def mentions_secret(text: str) -> bool:
    """Whether the text talks about a password, token, key or the like."""
    return bool(_SECRET_WORDS.search(text))
