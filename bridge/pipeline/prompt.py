"""Assemble the model request in DESIGN.md's fixed order.

System: persona, skill index (marked for prompt caching: they change rarely, so every
turn after the first reads them from the cache). Messages: the transcript (its end
marked for caching too), then the new message, headed by this turn's context blocks in
the order the context sources are registered (``context/``: `<slack-context>`,
`<user-model>`, `<related-episodes>`, the dropped-turns note …); this module knows none
of them by name. Decided (issue 27): the context blocks keep DESIGN.md's order among
themselves but travel with the turn's message rather than in the system prompt, because
each of them may change from one turn to the next, and any change ahead of the
conversation would make every turn pay to cache the whole conversation again instead of
reading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bridge.model.catalogue import Capabilities
from bridge.model.protocol import ModelRequest, Said, SystemSection, ToolSpec, WebTool
from bridge.pipeline.context import ContextBlock
from bridge.pipeline.shared_files import attachments_for
from bridge.pipeline.turn import Turn
from bridge.pipeline.web_access import WEB_NOTE, WEB_SECTION
from layers.working.budget import TrimmedTranscript

NO_SKILLS = "No skills are installed yet."
ANSWERED_CALL = "answered-tool-call"


@dataclass(frozen=True)
class GatheredContext:
    """What was gathered for a turn; None where a part was late or failed.

    The persona, the skill index and the transcript are the prompt's structure (system
    prompt, conversation, cache breakpoints); ``blocks`` are the context sources' blocks,
    in their order, the ones with nothing to say already left out.
    """

    persona: str | None = None
    skill_index: str | None = None
    transcript: TrimmedTranscript | None = None
    blocks: Sequence[ContextBlock] = ()


def build_request(
    turn: Turn,
    context: GatheredContext,
    *,
    model: str,
    tools: Sequence[ToolSpec] = (),
    max_tokens: int = 2048,
    effort: str | None = None,
    session_id: str | None = None,
    capabilities: Capabilities | None = None,
    web: frozenset[WebTool] = frozenset(),
) -> ModelRequest:
    """``capabilities``: what the model is shown of files (None: their text only);
    ``web``: the web tools the turn's place allows (``web_access.py``)."""
    system: list[SystemSection] = []
    # One breakpoint ends the stable part (tools, persona, skill index): a second on the
    # persona would cache a prefix the skill index's breakpoint already covers. On its own
    # that part is often under a model's minimum cacheable length (512 tokens and more),
    # so the conversation so far carries the other breakpoint (``_messages``).
    if context.persona:
        system.append(SystemSection("persona", context.persona))
    if web:
        # Before the breakpoint: the same for every turn in a place, so cached with it.
        system.append(SystemSection(WEB_SECTION, WEB_NOTE))
    system.append(
        SystemSection(
            "skill-index",
            f"<skill-index>\n{context.skill_index or NO_SKILLS}\n</skill-index>",
            cache=True,
        )
    )
    messages = _messages(turn, context.transcript)
    if turn.files:
        messages[-1] = replace(messages[-1],
                               attachments=attachments_for(turn.files, capabilities))
    return ModelRequest(
        model=model,
        system=tuple(system),
        messages=tuple(messages),
        context=tuple(_turn_context(context, turn)),
        turn_index=len(messages) - 1,
        tools=tuple(tools),
        max_tokens=max_tokens,
        effort=effort,
        session_id=session_id,
        person=turn.user,
        web=web,
    )


def _turn_context(context: GatheredContext, turn: Turn) -> list[SystemSection]:
    """The blocks DESIGN.md orders after the skill index, sent with the turn's message:
    each can change from one turn to the next (the speaker, a user model fetched for this
    message, episodes found on a first turn, how many turns were dropped), and in the
    system prompt any change would void the cached conversation behind it."""
    sections = [SystemSection(block.name, block.text) for block in context.blocks]
    if turn.answered_call:
        # A person answered a tool call this conversation asked for (a Slack card): what
        # they decided, in Thoth's words, and what the tool returned, quoted in them.
        sections.append(SystemSection(
            ANSWERED_CALL, f"<{ANSWERED_CALL}>\n{turn.answered_call}\n</{ANSWERED_CALL}>"))
    return sections


def _messages(turn: Turn, transcript: TrimmedTranscript | None) -> list[Said]:
    messages: list[Said] = []
    turns = transcript.turns if transcript else []
    # Speakers are named only when several people share the conversation.
    speakers = {t.user for t in turns} | {turn.user}
    for past in turns:
        said = past.user_text
        if len(speakers) > 1 and (past.user_name or past.user):
            said = f"{past.user_name or past.user}: {said}"
        messages.append(Said("user", said))
        messages.append(Said("assistant", past.reply_text))
    if messages:
        # The conversation so far is the same next turn: cached, it is read at a tenth of
        # the price, and with the stable part before it it passes the minimum length.
        messages[-1] = replace(messages[-1], cache=True)
    current = turn.text
    if len(speakers) > 1 and (turn.user_name or turn.user):
        current = f"{turn.user_name or turn.user}: {current}"
    messages.append(Said("user", current))
    return messages
