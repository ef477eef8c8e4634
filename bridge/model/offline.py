"""The responder used when no language model is configured.

It speaks the same Protocol as a real model, so the rest of the pipeline runs
exactly as it would with one. A statement is acknowledged (the turn is kept as an
episode, as every turn is). A question asks for the ``recall`` tool when the
prompt carries no `<related-episodes>`, and is answered with what memory holds for it.
The first reply of a conversation says plainly that no model is configured.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Callable, Sequence

from bridge import messages
from bridge.model.offline_evidence import best_evidence, rest_of_related
from bridge.model.protocol import ModelRequest, ModelResult, OnText, Said, ToolCall, ToolExchange
from bridge.model.question_or_statement import asks

log = logging.getLogger(__name__)

OFFLINE_MODEL = "offline"
# The recall tool's name (bridge/pipeline/tools/recall.py), which this floor cannot import.
RECALL_TOOL = "recall"
# How much of a statement the acknowledgement repeats.
NOTED_CHARS = 200
# Finds installed skills that fit a message: (name, description) pairs.
SkillFinder = Callable[[str], Sequence[tuple[str, str]]]
_TAG = re.compile(r"<(?P<tag>[a-z-]+)>\n?(?P<body>.*?)\n?</(?P=tag)>", re.DOTALL)


class OfflineResponder:
    """Answers from memory alone; costs nothing and never fails."""

    def __init__(self, find_skills: SkillFinder | None = None) -> None:
        self._find_skills = find_skills

    @property
    def name(self) -> str:
        return OFFLINE_MODEL

    @property
    def memory_only(self) -> bool:
        return True

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        last = request.messages[-1] if request.messages else None
        tool_results = (
            [outcome.text for outcome in last.outcomes] if isinstance(last, ToolExchange) else []
        )
        can_recall = any(tool.name == RECALL_TOOL for tool in request.tools)
        message = _turn_message(request)
        if not tool_results and not asks(message):
            # A statement is kept (the turn becomes an episode), not answered with
            # whatever memory holds about its words.
            return await _said(_noted(request, message), on_text)
        if request.section("related-episodes") is None and not tool_results and can_recall:
            call = ToolCall("offline-recall", RECALL_TOOL, {"query": message})
            return ModelResult(
                text="", tool_calls=(call,), stop_reason="tool_use", model=OFFLINE_MODEL
            )
        skills: Sequence[tuple[str, str]] = ()
        if self._find_skills is not None:
            try:
                skills = await asyncio.to_thread(self._find_skills, _turn_message(request))
            except Exception:
                log.exception("matching skills failed; answering without them")
        return await _said(_answer(request, tool_results, skills), on_text)

    async def aclose(self) -> None:
        return None


async def _said(text: str, on_text: OnText) -> ModelResult:
    await on_text(text)
    return ModelResult(text=text, stop_reason="end_turn", model=OFFLINE_MODEL)


def _first_turn(request: ModelRequest) -> bool:
    """No earlier reply of this session is in the request: the turn opens the
    conversation (its own tool round, after its message, does not count)."""
    turn_at = next(
        (at for at in range(len(request.messages) - 1, -1, -1)
         if _said_by_user(request.messages[at])),
        0,
    )
    return not any(
        isinstance(m, Said) and m.role == "assistant" for m in request.messages[:turn_at])


def _noted(request: ModelRequest, message: str) -> str:
    kept = message.strip()
    if len(kept) > NOTED_CHARS:
        kept = kept[:NOTED_CHARS].rstrip() + "…"
    noted = messages.OFFLINE_NOTED.format(message=kept)
    return f"{messages.NO_MODEL_CONFIGURED}\n\n{noted}" if _first_turn(request) else noted


def _answer(
    request: ModelRequest, tool_results: list[str], skills: Sequence[tuple[str, str]]
) -> str:
    # The banner once, at the start of a conversation, not above every answer.
    parts = [messages.NO_MODEL_CONFIGURED] if _first_turn(request) else []
    # The blocks hold remembered text as quoted data (layers/shared/quoting.py); shown to
    # a person, it is their words again ("R&D", not "R&amp;D").
    related = _untagged(request.section("related-episodes")) or html.unescape(
        "\n".join(tool_results).strip())
    if related and related != "No matching episodes.":
        evidence = best_evidence(_turn_message(request), related)
        if evidence:
            shown = "\n".join(str(item) for item in evidence)
            parts.append(f"{messages.OFFLINE_BEST_EVIDENCE}\n{shown}")
        rest = rest_of_related(related, evidence)
        if rest:
            parts.append(f"{messages.OFFLINE_ALSO_RELATED}\n{rest}")
    else:
        parts.append(messages.NOTHING_REMEMBERED)
    user_model = _untagged(request.section("user-model"))
    if user_model:
        parts.append(f"What I know about you:\n{user_model}")
    if skills:
        listed = "\n".join(f"- {name}: {description}" for name, description in skills)
        parts.append(f"Skills that may help:\n{listed}")
    return "\n\n".join(parts)


def _turn_message(request: ModelRequest) -> str:
    """The message of this turn: the last user message that is text, not tool results."""
    said = next((m for m in reversed(request.messages) if _said_by_user(m)), None)
    return said.text if isinstance(said, Said) else ""


def _said_by_user(message: object) -> bool:
    return isinstance(message, Said) and message.role == "user"


def _untagged(section: str | None) -> str:
    if not section:
        return ""
    match = _TAG.fullmatch(section.strip())
    return html.unescape((match.group("body") if match else section).strip())
