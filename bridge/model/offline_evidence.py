"""The offline answer's first part: the sentences from memory that best answer a message.

Without a model, the best Thoth can do is put the evidence first: of the recalled
episodes (the `<related-episodes>` lines, best first), the sentences a person said, or a
file they shared holds (its passage the question is about, on the line under the
episode's), that share the most words with the message, with who said or shared them,
where and when. Questions are never evidence: "what do you know about the backups?"
answers nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from layers.episodic.lexical import content_words

# The line `episodes_block.episode_line` writes: "- 2026-11-23, a DM, dana: text".
_EPISODE_LINE = re.compile(
    r"^- (?P<day>\d{4}-\d{2}-\d{2}), (?P<where>a DM|a group DM|#[^,]+),"
    r" (?P<who>[^:]+): (?P<said>.+)$"
)
# The line `episodes_block.hit_lines` writes under it for a file shared with it:
# "  shared spec.pdf (pdf): the passage of it the question is about".
_FILE_LINE = re.compile(r"^shared (?P<name>.+?) \((?P<kind>[a-z]+)\): (?P<passage>.+)$")
# Where a PDF's extract says a page begins (bridge/files/reading.py): "[page 2]".
_PAGE = re.compile(r"\[page (\d+)\]")
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
    # The file it is from ("spec.pdf, page 2"); None for the person's own words.
    source: str | None = None

    def __str__(self) -> str:
        said = f"> {self.sentence}\n— {self.who}, in {self.where}, {self.day}"
        return f"{said} ({self.source})" if self.source else said


@dataclass
class _Remembered:
    """One recalled episode's lines (its own, its reply's, its files'), and the
    sentences among them that may be evidence."""

    who: str
    where: str
    day: str
    lines: list[str] = field(default_factory=list)
    # Each sentence, and the file it is from (None: the person's words).
    sentences: list[tuple[str, str | None]] = field(default_factory=list)


def best_evidence(message: str, related: str) -> list[Evidence]:
    """The sentences of ``related`` that best answer ``message``, best first (maybe none)."""
    wanted = set(content_words(message))
    scored: list[tuple[int, int, Evidence]] = []
    seen: set[Evidence] = set()
    for remembered in _remembered(related):
        for sentence, source in remembered.sentences:
            if sentence.endswith("?"):
                continue
            overlap = len(wanted & set(content_words(sentence)))
            evidence = Evidence(sentence, remembered.who, remembered.where, remembered.day,
                                source)
            # The same file shared twice the same day is one piece of evidence.
            if overlap and evidence not in seen:
                seen.add(evidence)
                scored.append((overlap, len(scored), evidence))
    # Most shared words first; among equals, the order recall ranked them in.
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [evidence for _, _, evidence in scored[:BEST_SENTENCES]]


def rest_of_related(related: str, shown: list[Evidence]) -> str:
    """``related`` without the episodes whose every sentence (their files' too) is
    already in ``shown``."""
    shown_sentences = {(item.who, item.where, item.day, item.sentence, item.source)
                       for item in shown}
    kept: list[str] = []
    for remembered in _remembered(related):
        whole = bool(remembered.sentences) and all(
            (remembered.who, remembered.where, remembered.day, sentence, source)
            in shown_sentences for sentence, source in remembered.sentences)
        if not whole:
            kept.extend(remembered.lines)
    return "\n".join(kept).strip()


def _remembered(related: str) -> Iterator[_Remembered]:
    """The episodes of ``related``, each with the lines under it (what comes before the
    first is passed on as it is, as an episode of no sentences)."""
    current = _Remembered("", "", "")
    for line in related.splitlines():
        found = _EPISODE_LINE.match(line) if line.startswith("-") else None
        if found is not None:
            yield current
            current = _Remembered(found["who"], found["where"], found["day"])
            current.sentences.extend((sentence, None) for sentence in _sentences(found["said"]))
        else:
            shared = _FILE_LINE.match(line.strip())
            if shared is not None and current.who:
                current.sentences.extend(_file_sentences(shared["name"], shared["passage"]))
        # A line that is not an episode's first (its reply, its files) goes with it.
        current.lines.append(line)
    yield current


def _file_sentences(name: str, passage: str) -> Iterator[tuple[str, str | None]]:
    """A file's passage as sentences, each with the file (and its page, for a PDF's)."""
    pieces = _PAGE.split(passage)
    # Before the first page mark, the passage began inside a page it does not name.
    pages: list[tuple[str | None, str]] = [(None, pieces[0])]
    pages += [(pieces[at], pieces[at + 1]) for at in range(1, len(pieces) - 1, 2)]
    for page, text in pages:
        source = f"{name}, page {page}" if page else name
        yield from ((sentence, source) for sentence in _sentences(text))


def _sentences(text: str) -> list[str]:
    return [sentence.strip() for sentence in _SENTENCE_END.split(text.strip())
            if sentence.strip()]
