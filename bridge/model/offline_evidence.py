"""The offline answer's first part: the sentences from memory that best answer a message.

Without a model, the best Thoth can do is put the evidence first: of the recalled
episodes (the `<related-episodes>` lines, best first), the sentences a person said that
share the most words with the message, with who said them, where and when. Questions
are never evidence: "what do you know about the backups?" answers nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from layers.episodic.lexical import content_words

# The line `episodes_block.episode_line` writes: "- 2026-11-23, a DM, dana: text".
_EPISODE_LINE = re.compile(
    r"^- (?P<day>\d{4}-\d{2}-\d{2}), (?P<where>a DM|a group DM|#[^,]+),"
    r" (?P<who>[^:]+): (?P<said>.+)$"
)
# A sentence ends at . ! or ? and a space, but not at a list's "1." or "12.".
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!^\d\.)(?<!\s\d\.)(?<!^\d\d\.)(?<!\s\d\d\.)\s+")
BEST_SENTENCES = 2


@dataclass(frozen=True)
class Evidence:
    sentence: str
    who: str
    where: str
    day: str

    def __str__(self) -> str:
        return f"> {self.sentence}\n— {self.who}, in {self.where}, {self.day}"


def best_evidence(message: str, related: str) -> list[Evidence]:
    """The sentences of ``related`` that best answer ``message``, best first (maybe none)."""
    wanted = set(content_words(message))
    scored: list[tuple[int, int, Evidence]] = []
    for line in related.splitlines():
        found = _EPISODE_LINE.match(line.strip())
        if found is None:
            continue
        for sentence in _SENTENCE_END.split(found["said"].strip()):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?"):
                continue
            overlap = len(wanted & set(content_words(sentence)))
            if overlap:
                evidence = Evidence(sentence, found["who"], found["where"], found["day"])
                scored.append((overlap, len(scored), evidence))
    # Most shared words first; among equals, the order recall ranked them in.
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [evidence for _, _, evidence in scored[:BEST_SENTENCES]]


def rest_of_related(related: str, shown: list[Evidence]) -> str:
    """``related`` without the episodes whose every sentence is already in ``shown``."""
    shown_sentences = {(item.who, item.where, item.day, item.sentence) for item in shown}
    kept: list[str] = []
    keeping = True
    for line in related.splitlines():
        found = _EPISODE_LINE.match(line.strip()) if line.startswith("-") else None
        if found is not None:
            sentences = [s.strip() for s in _SENTENCE_END.split(found["said"].strip()) if s.strip()]
            keeping = not all(
                (found["who"], found["where"], found["day"], sentence) in shown_sentences
                for sentence in sentences
            )
        # A line that is not an episode's first (its reply) goes with its episode.
        if keeping:
            kept.append(line)
    return "\n".join(kept).strip()
