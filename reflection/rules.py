"""Reflection without a model: what people said plainly becomes notes and updates.

Only the humans' own messages are read, never the agent's replies (its paraphrase
of a person is not that person's word). Explicit "remember …" requests and
decisions become memory notes; preferences, constraints, facts people state about
themselves and corrections become user-model updates (the identity layer's own
extraction rules); a procedure a person wrote out step by step can become a skill
draft. Questions and negated statements are left out.
"""

from __future__ import annotations

import re

from layers.identity.local.extraction import extract, mentions_secret
from layers.procedural.skills import SLUG_PATTERN
from reflection.report import MAX_MEMORY_NOTES, Outcome, Reflection
from reflection.session_input import SessionInput

_REMEMBER = re.compile(
    r"^(please )?(remember|note|keep in mind)( that|:)\s*(?P<what>.+)", re.I
)
_DECISION = re.compile(
    r"\b(we (have )?decided|decision:|we agreed|agreed (to|that)|let's go with|we'll go with|"
    r"we will go with|going forward,? we)\b",
    re.I,
)
_QUESTION = re.compile(
    r"\?\s*$|^(have|has|had|did|do|does|is|are|was|were|should|shall|can|could|would|will"
    r"|who|what|when|where|why|how)\b",
    re.I,
)
_NEGATED = re.compile(r"\b(not|never|no one|nobody|yet)\b|n't\b", re.I)
_FAILED_ATTEMPTS = re.compile(
    r"\b(tried|none worked|didn't work|did not work|failed|broke)\b", re.I
)
_QUOTED = re.compile(r"^>.*$", re.MULTILINE)
_STEP = re.compile(r"^\s*(\d+)[.)]\s+(?P<step>\S.*)$", re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!])\s+|\n+")
MIN_STEPS = 3


def reflect_by_rules(session: SessionInput) -> Reflection:
    notes: list[str] = []
    updates: dict[str, list[str]] = {}
    skill: tuple[str, str, str] | None = None
    for turn in session.turns:
        # Quoted lines are someone else's words (often the agent's).
        own_words = _QUOTED.sub(" ", turn.user_text)
        for sentence in _SENTENCE.split(own_words):
            note = _note(sentence.strip())
            if note and note not in notes and not _known(note, session.recent_notes):
                notes.append(note)
        if turn.user:
            for statement in extract(turn.user_text):
                updates.setdefault(turn.user, [])
                if statement.text not in updates[turn.user]:
                    updates[turn.user].append(statement.text)
        skill = skill or _procedure(own_words, session.existing_skills)
    outcome = _outcome(session)
    return Reflection(
        outcome=outcome,
        what_worked=f"{sum(t.ok for t in session.turns)} of {len(session.turns)} turns answered",
        what_didnt=None if outcome == "success" else "some replies failed or were marked ❌",
        should_skill=skill is not None,
        skill_slug=skill[0] if skill else None,
        skill_description=skill[1] if skill else None,
        skill_body=skill[2] if skill else None,
        memory_notes=notes[:MAX_MEMORY_NOTES],
        user_model_updates=updates,
    )


def _note(sentence: str) -> str | None:
    if not sentence or _QUESTION.search(sentence) or mentions_secret(sentence):
        return None
    remember = _REMEMBER.match(sentence)
    if remember:
        return remember.group("what").rstrip(" .")
    if _DECISION.search(sentence) and not _NEGATED.search(sentence):
        return f"Decision: {sentence.rstrip(' .')}"
    return None


def _known(note: str, recent: list[str]) -> bool:
    words = set(re.findall(r"[a-z0-9]+", note.lower()))
    for line in recent:
        seen = set(re.findall(r"[a-z0-9]+", line.lower()))
        if words and len(words & seen) / len(words) >= 0.8:
            return True
    return False


def _procedure(text: str, existing: list[str]) -> tuple[str, str, str] | None:
    steps = _STEP.findall(text)
    if len(steps) < MIN_STEPS:
        return None
    first_line = text.strip().splitlines()[0]
    if _FAILED_ATTEMPTS.search(first_line):
        return None  # a list of things that did not work is not a procedure
    title = first_line if not _STEP.match(first_line) else "procedure"
    words = re.findall(r"[a-z0-9]+", title.lower())[:5] or ["procedure"]
    slug = "-".join(words)[:50].strip("-")
    if not slug or not slug[0].isalpha() or not SLUG_PATTERN.match(slug):
        slug = "procedure-" + slug if slug else "procedure"
    if slug in existing or not SLUG_PATTERN.match(slug):
        return None
    body = "\n".join(f"{n}. {step}" for n, step in steps)
    return slug, f"How to {title.rstrip(':.').lower()}", f"# {title.rstrip(':')}\n\n{body}\n"


def _outcome(session: SessionInput) -> Outcome:
    if any(value < 0 for value in session.feedback) or not any(t.ok for t in session.turns):
        return "failure"
    if all(t.ok for t in session.turns) and all(value >= 0 for value in session.feedback):
        return "success"
    return "partial"
