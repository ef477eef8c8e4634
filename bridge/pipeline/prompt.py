"""Assemble the model request in DESIGN.md's fixed order.

System: persona, skill index (marked for prompt caching: they change rarely, so every
turn after the first reads them from the cache). Messages: the transcript (its end
marked for caching too), then the new message, headed by this turn's context —
`<slack-context>`, `<user-model>`, `<related-episodes>` and the dropped-turns note.
Decided (issue 27): the context blocks keep DESIGN.md's order among themselves but
travel with the turn's message rather than in the system prompt, because each of them
may change from one turn to the next, and any change ahead of the conversation would
make every turn pay to cache the whole conversation again instead of reading it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from bridge.model.protocol import ModelRequest, Said, SystemSection, ToolSpec
from bridge.pipeline.episodes_block import episodes_text, where_said
from bridge.pipeline.quoting import quoted
from bridge.pipeline.turn import Turn
from layers.episodic.episode import Hit
from layers.notes.store import Note
from layers.working.budget import TrimmedTranscript

NO_SKILLS = "No skills are installed yet."


@dataclass(frozen=True)
class GatheredContext:
    """What the context sources returned; None where a source was off, late or failed."""

    persona: str | None = None
    skill_index: str | None = None
    user_model: str | None = None
    related: Sequence[Hit] | None = None
    transcript: TrimmedTranscript | None = None
    # The kept memory notes that may be read here (layers/notes/).
    notes: Sequence[Note] | None = None


def build_request(
    turn: Turn,
    context: GatheredContext,
    *,
    model: str,
    tools: Sequence[ToolSpec] = (),
    max_tokens: int = 2048,
    effort: str | None = None,
    session_id: str | None = None,
) -> ModelRequest:
    system: list[SystemSection] = []
    # One breakpoint ends the stable part (tools, persona, skill index): a second on the
    # persona would cache a prefix the skill index's breakpoint already covers. On its own
    # that part is often under a model's minimum cacheable length (512 tokens and more),
    # so the conversation so far carries the other breakpoint (``_messages``).
    if context.persona:
        system.append(SystemSection("persona", context.persona))
    system.append(
        SystemSection(
            "skill-index",
            f"<skill-index>\n{context.skill_index or NO_SKILLS}\n</skill-index>",
            cache=True,
        )
    )
    messages = _messages(turn, context.transcript)
    return ModelRequest(
        model=model,
        system=tuple(system),
        messages=tuple(messages),
        context=tuple(_turn_context(turn, context)),
        turn_index=len(messages) - 1,
        tools=tuple(tools),
        max_tokens=max_tokens,
        effort=effort,
        session_id=session_id,
        person=turn.user,
    )


def _turn_context(turn: Turn, context: GatheredContext) -> list[SystemSection]:
    """The blocks DESIGN.md orders after the skill index, sent with the turn's message:
    each can change from one turn to the next (the speaker, a user model fetched for this
    message, episodes found on a first turn, how many turns were dropped), and in the
    system prompt any change would void the cached conversation behind it."""
    sections = [SystemSection("slack-context", _tagged("slack-context", slack_context(turn)))]
    if context.notes:
        sections.append(SystemSection("memory-notes", _tagged(
            "memory-notes", quoted(notes_text(context.notes)))))
    if context.user_model:
        sections.append(SystemSection("user-model", _tagged(
            "user-model", quoted(context.user_model))))
    if context.related:
        sections.append(SystemSection("related-episodes", _tagged(
            "related-episodes", quoted(episodes_text(context.related)))))
    note = context.transcript.note if context.transcript else None
    if note:
        sections.append(SystemSection("dropped-turns", note))
    return sections


def notes_text(notes: Sequence[Note]) -> str:
    """One line a note: when, who asked for it (or which conversation), where, the note."""
    lines = []
    for note in notes:
        day = datetime.fromtimestamp(note.created_at, UTC).date().isoformat()
        where = where_said(note.place.channel_type, note.place.channel)
        who = note.author_name or note.user or note.source
        lines.append(f"- {day}, {who} in {where}: {note.text}")
    return "\n".join(lines)


def slack_context(turn: Turn) -> str:
    place = turn.place
    kind = {
        "im": "direct message",
        "mpim": "group direct message",
        "private": "private channel",
        "public": "public channel",
    }[place.channel_type]
    channel = f"#{place.channel_name}" if place.channel_name else place.channel
    lines = [
        f"workspace: {place.team}",
        f"channel: {channel} ({kind})",
        f"thread: {place.thread_ts or 'none'}",
        f"speaker: {turn.user_name or turn.user or 'unknown'}"
        + (f" ({turn.user})" if turn.user and turn.user_name else ""),
    ]
    return "\n".join(lines)


def _tagged(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


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
