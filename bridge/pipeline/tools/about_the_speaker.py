"""``what_i_know_about_you`` and ``forget_about_you``: the person speaking reads, or
deletes, what identity memory holds about them — only ever about themselves."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from bridge.model.protocol import ToolSpec
from bridge.pipeline.quoting import quoted
from bridge.pipeline.tools import Tool, ToolResult
from bridge.pipeline.turn import Turn
from layers.audit.log import AuditLog, slack_actor
from layers.identity.known_as import facts_of, forget_all_of, forget_fact_of
from layers.identity.protocol import IdentityBackend, Person
from layers.offloaded import Offloaded
from layers.places import LOCAL_TEAM

log = logging.getLogger(__name__)

# The person's own words that confirm deleting everything about them.
CONFIRM_FORGET = re.compile(
    r"^\W*yes\W+(?:please\W+)?forget (?:everything|it all|all)\b", re.IGNORECASE)
CONFIRM_WINDOW_S = 600.0
FORGET_ALL_ASKS = (
    "Nothing is deleted yet: deleting everything about them needs their own confirmation."
    " Ask them to reply 'yes, forget everything' if that is what they want."
)
ANONYMOUS = "The speaker is anonymous here; nothing is stored about them."

ABOUT_SPEAKER = ToolSpec(
    name="what_i_know_about_you",
    description=(
        "List what the identity memory holds about the person speaking now, with ids."
        " Use it when they ask what you know or remember about them."
    ),
    input_schema={"type": "object", "properties": {}},
)
FORGET_SPEAKER = ToolSpec(
    name="forget_about_you",
    description=(
        "Delete what the identity memory holds about the person speaking now: one fact by"
        " its id from what_i_know_about_you, or everything when no id is given. Only when"
        " they ask you to forget something about them. Forgetting everything needs the"
        " person's own confirmation in their next message ('yes, forget everything')."
    ),
    input_schema={
        "type": "object",
        "properties": {"fact_id": {"type": "string", "description": "omit to forget all"}},
    },
)


def about_the_speaker(
    identity: IdentityBackend,
    *,
    on_forget: Callable[[Person], None] | None = None,
    stop_ingest: Callable[[Person], Awaitable[object]] | None = None,
    audit: Offloaded[AuditLog] | None = None,
) -> list[Tool]:
    """``stop_ingest`` runs before everything is forgotten: nothing said before (this very
    turn included) is sent to the identity backend afterwards (layers/identity/tombstones).
    ``audit``: each forget is written there, as the person's own, from the conversation."""
    confirmations = ForgetConfirmations()

    async def what_i_know(arguments: dict[str, Any], turn: Turn) -> ToolResult:
        if turn.person is None:
            return ANONYMOUS, True
        # Only what may be read here: a DM's facts never come up in a channel.
        facts = await facts_of(identity, turn.known_as(), turn.viewer)
        lines = [f"- [{fact.id}] {quoted(fact.text)}" for fact in facts]
        return "\n".join(lines) or "Nothing is stored about them.", False

    async def forget(arguments: dict[str, Any], turn: Turn) -> ToolResult:
        person = turn.person
        if person is None:
            return ANONYMOUS, True
        fact_id = arguments.get("fact_id")
        if isinstance(fact_id, str):
            said = f"deleted {await forget_fact_of(identity, turn.known_as(), fact_id)} fact(s)"
            action, target = "fact.forget", f"fact:{fact_id}"
        elif not confirmations.confirmed(person, turn):
            return FORGET_ALL_ASKS, False
        else:
            said = (await forget_all_of(identity, turn.known_as(), first=stop_ingest)).describe()
            action, target = "person.forget", f"person:{person.key}"
        if audit is not None:
            actor = person.user if person.team == LOCAL_TEAM else slack_actor(person.user)
            await audit.run(AuditLog.record, actor=actor, action=action, target=target,
                            origin="conversation", detail=said)
        if on_forget is not None:
            for known in turn.known_as():
                on_forget(known)
        log.info("forgot at the speaker's request: %s", said)
        return f"Done: {said} about them.", False

    return [Tool(ABOUT_SPEAKER, "Reading what I know about you", what_i_know),
            Tool(FORGET_SPEAKER, "Forgetting what you asked", forget)]


class ForgetConfirmations:
    """Whether deleting everything about a person is their own wish, confirmed.

    A model's word is not enough (stored text could talk it into the call): the first
    call only asks, and the delete runs when a later message of the person's own begins
    "yes, forget everything", within CONFIRM_WINDOW_S of the ask. Decided: words, not a
    button, so the same confirmation works in Slack and in the terminal; the ask is this
    process's (with several replicas a confirmation that lands on another one is asked
    again: nothing is deleted on a guess).
    """

    def __init__(self) -> None:
        # Whose "forget everything" was asked for, in which of their turns (its time).
        self._asked: dict[str, float] = {}

    def confirmed(self, person: Person, turn: Turn) -> bool:
        asked = self._asked.get(person.key)
        later = asked is not None and asked < turn.received_at <= asked + CONFIRM_WINDOW_S
        if later and CONFIRM_FORGET.match(turn.text):
            del self._asked[person.key]
            return True
        if asked is None or turn.received_at > asked:
            self._asked[person.key] = turn.received_at
        return False

