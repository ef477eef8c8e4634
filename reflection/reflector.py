"""Making the report: with a model (through a tool schema), or by the rules.

The model answers by calling ``report_reflection``, whose input schema is the
``Reflection`` model's: forced where the model accepts a forced tool, asked for in words
where it refuses one (Opus 5.5, Sonnet 5.5, the Fables), and asked once more when an
answer did not call it. Its raw output is kept for debugging whatever happens. The
model comes through reflection's own Protocol (``model.py``), with the daily cap and
the charge already around it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Protocol

from layers.shared.errors import BackendUnavailable, BadInput
from layers.shared.redaction import redact, redact_values
from reflection.model import ReportModel, Tool, ToolAnswer
from reflection.report import Reflection, parse_report, tool_schema
from reflection.rules import reflect_by_rules
from reflection.session_input import SessionInput

log = logging.getLogger(__name__)

TOOL_NAME = "report_reflection"
# Defaults for a model that does not think; the composition root sizes both for the
# reflection model (thinking shares max_tokens with the report).
MAX_TOKENS = 4_000
# A report cut at the length limit is not a report: asked once more, with this much room.
MAX_TOKENS_RETRY = 8_000
# Said once more when an answer did not call the tool (models that refuse a forced tool
# are offered it and asked in words, and may answer in prose).
REMINDER = (
    f"Answer only by calling the {TOOL_NAME} tool, once, with the whole report as"
    " its input. Do not answer in text."
)
# The conversation sent for reflection (about 40k tokens): a longer one keeps its start
# and its end, and says what was left out, so it always fits the context window.
MAX_PROMPT_TRANSCRIPT_CHARS = 160_000
INSTRUCTIONS = """You review one finished conversation of Thoth, a team's Slack agent, and \
decide what to keep. Call the report_reflection tool exactly once.

- outcome: success, partial or failure, judged by whether the people got what they needed.
- memory_notes: at most 5 durable facts or decisions the team stated (not the agent's \
guesses), each one line. Leave out anything already in the recent notes below.
- should_skill / skill_*: only for a procedure that will recur; slug in lower-case-dashes; \
the body is the procedure itself, step by step. Never one of the existing skills.
- persona_observations: how Thoth should behave differently, for the founders to decide.
- user_model_updates: {user id: [facts the person stated about themselves]}; the user id \
is the one in parentheses after each speaker's name.
- next_check_at: ISO time to check back on something left open, or null.
Never include secrets, tokens or passwords."""


class Reflector(Protocol):
    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        """The report, and the raw model output (None when no model was asked)."""
        ...


class RuleReflector:
    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        return reflect_by_rules(session), None


@dataclass
class ModelReflector:
    model: ReportModel
    max_tokens: int = MAX_TOKENS
    retry_max_tokens: int = MAX_TOKENS_RETRY

    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        answer = self._ask_uncut(session, reminder=None)
        raw = _raw(answer)
        if answer.tool_input is None:
            try:
                return parse_report(raw), raw
            except BadInput:
                log.warning("reflection of %s did not call %s; asking once more",
                            session.session_id, TOOL_NAME)
            answer = self._ask_uncut(session, reminder=REMINDER)
            # Both answers are kept for debugging, the first one's prose included.
            raw = "\n".join(part for part in (raw, _raw(answer)) if part)
        if answer.tool_input is not None:
            return parse_report(dict(answer.tool_input)), raw
        # Neither answer called the tool: a report in its text is taken, or this fails
        # (BadInput) and the run is retried later, as any failed reflection is.
        return parse_report(_raw(answer)), raw

    def _ask_uncut(self, session: SessionInput, *, reminder: str | None) -> ToolAnswer:
        answer = self._ask(session, self.max_tokens, reminder)
        if answer.stop_reason == "max_tokens":
            log.warning("reflection of %s was cut at %d tokens; asking with more room",
                        session.session_id, self.max_tokens)
            answer = self._ask(session, self.retry_max_tokens, reminder)
            if answer.stop_reason == "max_tokens":
                raise BackendUnavailable(
                    "the reflection report was cut at the length limit twice; it will be"
                    " retried later"
                )
        return answer

    def _ask(self, session: SessionInput, max_tokens: int, reminder: str | None) -> ToolAnswer:
        return self.model.call_tool(
            system=INSTRUCTIONS,
            prompt=_prompt(session),
            tool=Tool(TOOL_NAME, "Report the reflection on the conversation.", tool_schema()),
            max_tokens=max_tokens,
            session_id=session.session_id,
            reminder=reminder,
        )


def _prompt(session: SessionInput) -> str:
    skills = ", ".join(session.existing_skills) or "none"
    notes = "\n".join(session.recent_notes[-20:]) or "none"
    feedback = ", ".join({1: "✅", -1: "❌"}.get(v, "") for v in session.feedback) or "none"
    return (
        f"Existing skills: {skills}\nRecent memory notes:\n{notes}\n"
        f"Feedback on the replies: {feedback}\n\nThe conversation:\n"
        f"{_within_budget(redact(session.transcript_text()))}"
    )


def _within_budget(text: str, limit: int = MAX_PROMPT_TRANSCRIPT_CHARS) -> str:
    """The start (a third) and the end (the rest) of a long conversation, and a line
    saying how much of the middle was left out."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 3], text[-(limit - limit // 3) :]
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[… {left_out} characters of the middle of the conversation left out …]\n{tail}"


def _raw(answer: ToolAnswer) -> str:
    parts = [answer.text] if answer.text else []
    if answer.tool_input is not None:
        # Redacted before it becomes JSON text (see redact_values).
        parts.append(json.dumps(redact_values(answer.tool_input)))
    return "\n".join(parts)
