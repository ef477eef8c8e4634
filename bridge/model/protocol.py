"""What the pipeline asks of a language model, and what it gets back.

A request keeps its prompt as named sections — the system prompt's (persona, skill
index) and the turn's context blocks — so wrappers and the offline responder can read
them; the Anthropic implementation turns them into the API's text blocks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bridge.model.pricing import Usage

OnText = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class SystemSection:
    """One part of the system prompt; ``cache`` marks a stable prefix for prompt caching."""

    name: str
    text: str
    cache: bool = False


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: tuple[SystemSection, ...]
    # Anthropic message params: {"role": "user" | "assistant", "content": str | [blocks]}.
    messages: tuple[dict[str, Any], ...]
    tools: tuple[ToolSpec, ...] = ()
    # Thinking and text together, on a model that thinks (``output_budget.py``).
    max_tokens: int = 2048
    # output_config.effort; sent only to a model that takes it (``Capabilities.effort_for``).
    effort: str | None = None
    # The tool the model must call (reflection's report), or None to let it choose. Forced
    # where the model accepts it; elsewhere offered, and the prompt asks for the call.
    tool_choice: str | None = None
    # Who asks, for the ledger: "turn" or "reflection", and in which session.
    purpose: str = "turn"
    session_id: str | None = None
    # Whose turn it is (their daily share of the spend); None for reflection.
    person: str | None = None
    # What is about this turn only (the place and speaker, the user model, related
    # episodes, the dropped-turns note): sent at the head of the turn's own message
    # (``messages[turn_index]``), after the cached conversation, so that what changes from
    # one turn to the next never changes a cached prefix.
    context: tuple[SystemSection, ...] = ()
    turn_index: int = 0

    def section(self, name: str) -> str | None:
        return next((s.text for s in (*self.system, *self.context) if s.name == name), None)

    def after_tools(self, result: ModelResult, outcomes: Sequence[ToolOutcome]) -> ModelRequest:
        """The next round's request: the model's turn as it came (every block, thinking
        and its signature included: the API refuses a tool round whose thinking was
        dropped or changed), then what each tool answered. The wire format is the model's
        concern; the pipeline deals in calls and outcomes."""
        results = [
            {"type": "tool_result", "tool_use_id": outcome.call_id, "content": outcome.text,
             **({"is_error": True} if outcome.is_error else {})}
            for outcome in outcomes
        ]
        return replace(self, messages=(
            *self.messages,
            {"role": "assistant", "content": list(result.content)},
            {"role": "user", "content": results},
        ))


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call answered: text for the model, and whether it is an error."""

    call_id: str
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class ModelResult:
    # The text blocks only: never thinking, which is neither shown nor stored.
    text: str
    # The assistant turn's every content block (thinking, redacted thinking, text,
    # tool_use) in order and as received: a tool round sends them back unmodified.
    content: tuple[dict[str, Any], ...]
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    model: str = ""
    # What the call cost in dollars, set by ``MeteredModel`` (0 when nothing charges).
    cost_usd: float = 0.0


class ModelUnavailable(Exception):
    """The model could not answer; ``retryable`` if trying again may help."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class ModelRefusedRequest(ModelUnavailable):
    """The API refused the request itself (a 4xx other than a rate limit): asking again
    gets the same answer, so it is a configuration problem, with the API's own words."""

    def __init__(self, status: int, api_message: str) -> None:
        super().__init__(f"the model API refused the request ({status}): {api_message}",
                         retryable=False)
        self.status = status
        self.api_message = api_message


class PromptTooLong(ModelRefusedRequest):
    """The conversation no longer fits the model's context window: a new thread would."""


class SpendLimitReached(ModelUnavailable):
    """The organisation's Anthropic spend limit is reached: no retry helps until it resets."""

    def __init__(self, api_message: str) -> None:
        super().__init__(f"the Anthropic spend limit is reached: {api_message}",
                         retryable=False)
        self.api_message = api_message


class ModelAsksToWait(ModelUnavailable):
    """The API asked for a wait (``retry-after``) longer than the turn may take."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the model asks to wait {seconds:.0f}s", retryable=False,
                         retry_after=seconds)
        self.seconds = seconds


class LanguageModel(Protocol):
    """Answers one request, streaming text through ``on_text`` as it arrives."""

    @property
    def name(self) -> str:
        """The model's id as stored with episodes (``offline`` for the responder)."""
        ...

    @property
    def memory_only(self) -> bool:
        """No language model behind it: its replies show what memory holds, they answer
        nothing (the offline responder)."""
        ...

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult: ...

    async def aclose(self) -> None: ...
