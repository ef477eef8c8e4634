"""What the pipeline asks of a language model, and what it gets back.

A request keeps its prompt as named sections — the system prompt's (persona, skill
index) and the turn's context blocks — so wrappers and the offline responder can read
them, and its conversation as neutral messages: what was said (``Said``) and the tool
rounds (``ToolExchange``). Only a model's adapter knows its API's wire format (content
blocks, what must be echoed back, which blocks the API refuses): the Anthropic one turns
all of it into the Messages API's params.

The web (``ModelRequest.web``) is named by what it does, ``search`` and ``fetch``: the
model's API runs those tools itself (Anthropic's server tools), so nothing here runs them;
their calls and results come back inside the model's turn (``ModelResult.echo``) and go
back with it, and what they read is named in ``ModelResult.sources``. A turn the API
paused mid-way (``pause_turn``) goes on with its turn so far sent back (``Paused``,
``ModelRequest.continued``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from bridge.model.pricing import Usage

OnText = Callable[[str], Awaitable[None]]
# The web tools a model's API may run itself in a turn: search the web, read a page.
WebTool = Literal["search", "fetch"]
WEB_TOOLS: tuple[WebTool, ...] = ("search", "fetch")
# How many times each web tool may run in one request (the API's ``max_uses``): a bound
# on what one call spends on searches, and on what a page may make the model read.
WEB_MAX_USES = 5


@dataclass(frozen=True)
class Source:
    """A web page a reply rests on: cited in its text, read whole, or found by a search."""

    url: str
    title: str


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
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Attachment:
    """A file shown with a message: an image or a PDF the model sees as it is
    (``data``, of ``media_type``), or a text file quoted (``text``); ``text`` alone
    with kind "unread" names files that were not read, and why."""

    name: str
    kind: Literal["image", "document", "text", "unread"]
    media_type: str | None = None
    data: bytes = b""
    text: str = ""


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call answered: text for the model, whether it is an error, and the
    images it answered with (a team's MCP tool), shown after the text."""

    call_id: str
    text: str
    is_error: bool = False
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class Said:
    """One message of the conversation as text: the person's (``user``) or the agent's."""

    role: Literal["user", "assistant"]
    text: str
    # The stable prefix for prompt caching ends after this message.
    cache: bool = False
    # The files shared with the message, shown before its words.
    attachments: tuple[Attachment, ...] = ()

    @property
    def characters(self) -> int:
        return len(self.text) + sum(len(attached.text) for attached in self.attachments)


@dataclass(frozen=True)
class ToolExchange:
    """A model turn that called tools, and what each tool answered."""

    calls: tuple[ToolCall, ...]
    outcomes: tuple[ToolOutcome, ...]
    # The model's turn as its adapter needs it sent back (``ModelResult.echo``).
    echo: tuple[object, ...] = ()

    @property
    def characters(self) -> int:
        return sum(len(str(call.input)) for call in self.calls) + sum(
            len(outcome.text) + sum(len(attached.text) for attached in outcome.attachments)
            for outcome in self.outcomes)


@dataclass(frozen=True)
class Paused:
    """The model's turn so far, which its API paused mid-way (a server tool's loop ran
    long): sent back as it came, the last message of the next request, so that the model
    goes on where it stopped instead of starting again."""

    echo: tuple[object, ...]

    @property
    def characters(self) -> int:
        # The blocks as the adapter keeps them (search results, fetched pages): a rough
        # size, for the estimate a cost reservation is made from.
        return sum(len(str(block)) for block in self.echo)


Message = Said | ToolExchange | Paused


@dataclass(frozen=True)
class ModelRequest:
    model: str
    system: tuple[SystemSection, ...]
    messages: tuple[Message, ...]
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
    # The web tools the model's API runs for this request (where the turn's place allows
    # them; ``bridge/pipeline/web_access.py``); none by default.
    web: frozenset[WebTool] = frozenset()

    def section(self, name: str) -> str | None:
        return next((s.text for s in (*self.system, *self.context) if s.name == name), None)

    def after_tools(self, result: ModelResult, outcomes: Sequence[ToolOutcome]) -> ModelRequest:
        """The next round's request: the conversation so far, then the model's tool calls
        with what each answered (and the model's echo of its turn)."""
        messages, echo = self._turn_so_far(result)
        exchange = ToolExchange(result.tool_calls, tuple(outcomes), echo)
        return replace(self, messages=(*messages, exchange))

    def continued(self, result: ModelResult) -> ModelRequest:
        """The request that lets a paused turn go on: the conversation so far, then the
        model's turn so far, as it came (no new message of the person's)."""
        messages, echo = self._turn_so_far(result)
        return replace(self, messages=(*messages, Paused(echo)))

    def _turn_so_far(self, result: ModelResult) -> tuple[tuple[Message, ...], tuple[object, ...]]:
        """The messages before the model's current turn, and that turn's echo: a paused
        part and what came after it are one turn of the model's, sent back as one."""
        if self.messages and isinstance(self.messages[-1], Paused):
            return self.messages[:-1], (*self.messages[-1].echo, *result.echo)
        return self.messages, result.echo

    @property
    def characters(self) -> int:
        """The prompt's length in characters: its sections and its messages."""
        return sum(len(section.text) for section in (*self.system, *self.context)) + sum(
            message.characters for message in self.messages)


@dataclass(frozen=True)
class ModelResult:
    # The text blocks only: never thinking, which is neither shown nor stored.
    text: str
    # The turn as the model's adapter must send it back in a tool round, opaque to
    # everyone else (Anthropic: every content block in order, thinking and its signature
    # as received, since the API refuses a round whose thinking was dropped or changed).
    echo: tuple[object, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    model: str = ""
    # What the call cost in dollars, set by ``MeteredModel`` (0 when nothing charges).
    cost_usd: float = 0.0
    # The web pages this answer rests on (its web tools' citations and reads), in order.
    sources: tuple[Source, ...] = ()


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
