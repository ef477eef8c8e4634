"""Making the report: with Claude (forced through a tool schema), or by the rules.

The model must answer by calling ``report_reflection``, whose input schema is the
``Reflection`` model's; its raw output is kept for debugging whatever happens.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from bridge.model.cost_ledger import CostLedger
from bridge.model.pricing import ModelPrice, Usage, price_of
from layers.errors import BackendUnavailable
from layers.redaction import redact, redact_values
from reflection.report import Reflection, parse_report, tool_schema
from reflection.rules import reflect_by_rules
from reflection.session_input import SessionInput

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

TOOL_NAME = "report_reflection"
MAX_TOKENS = 2_000
# A report cut at the length limit is not a report: asked once more, with this much room.
MAX_TOKENS_RETRY = 8_000
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


class CostCapReached(BackendUnavailable):
    """No model call today; not a failed attempt (the run waits for tomorrow)."""


class Reflector(Protocol):
    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        """The report, and the raw model output (None when no model was asked)."""
        ...


class RuleReflector:
    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        return reflect_by_rules(session), None


@dataclass
class ModelReflector:
    client: anthropic.Anthropic
    model: str
    ledger: CostLedger
    prices: dict[str, ModelPrice]
    daily_cap_usd: float

    def reflect(self, session: SessionInput) -> tuple[Reflection, str | None]:
        if self.ledger.spent_today() >= self.daily_cap_usd:
            raise CostCapReached(
                f"today's model spend reached DAILY_COST_CAP_USD (${self.daily_cap_usd:.2f});"
                " the reflection will be retried after midnight UTC"
            )
        message = self._ask(session, MAX_TOKENS)
        if message.stop_reason == "max_tokens":
            log.warning("reflection of %s was cut at %d tokens; asking with more room",
                        session.session_id, MAX_TOKENS)
            message = self._ask(session, MAX_TOKENS_RETRY)
            if message.stop_reason == "max_tokens":
                raise BackendUnavailable(
                    "the reflection report was cut at the length limit twice; it will be"
                    " retried later"
                )
        raw = _raw(message)
        for block in message.content:
            if block.type == "tool_use" and block.name == TOOL_NAME:
                return parse_report(dict(block.input)), raw
        return parse_report(raw), raw

    def _ask(self, session: SessionInput, max_tokens: int) -> Any:
        import anthropic  # imported where used: the SDK takes seconds to import

        try:
            message = self.client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=INSTRUCTIONS,
                tools=[
                    {
                        "name": TOOL_NAME,
                        "description": "Report the reflection on the conversation.",
                        "input_schema": tool_schema(),
                    }
                ],
                tool_choice={"type": "tool", "name": TOOL_NAME},
                messages=[{"role": "user", "content": _prompt(session)}],
            )
        except anthropic.APIError as error:
            raise BackendUnavailable(f"the reflection model failed: {error}") from error
        self._charge(message, session.session_id)
        return message

    def _charge(self, message: Any, session_id: str) -> None:
        usage = message.usage
        spent = Usage(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            getattr(usage, "cache_read_input_tokens", None) or 0,
            getattr(usage, "cache_creation_input_tokens", None) or 0,
        )
        cost = price_of(self.model, self.prices).cost(spent)
        self.ledger.record_all([(self.model, spent, cost)], purpose="reflection",
                               session_id=session_id)


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


def _raw(message: Any) -> str:
    parts = []
    for block in message.content:
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "tool_use":
            # Redacted before it becomes JSON text (see redact_values).
            parts.append(json.dumps(redact_values(block.input)))
    return "\n".join(parts)
