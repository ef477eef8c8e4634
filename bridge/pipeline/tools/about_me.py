"""``what_do_you_know_about_me`` and ``forget_about_me``: the person asking reads, or
deletes, what identity memory holds about them — only ever about themselves, and read
only as they may from where they ask (a DM's facts never come up in a channel)."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from bridge.pipeline.quoting import quoted
from bridge.pipeline.tools import Answer, Audit, Caller, Tool
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.data import when
from layers.identity.known_as import facts_of, forget_all_of, forget_fact_of
from layers.identity.protocol import IdentityBackend, Person
from layers.shared.audit.log import AuditLog
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

ABOUT_ME = "what_do_you_know_about_me"
FORGET_ME = "forget_about_me"
# The person's own words that confirm deleting everything about them.
CONFIRM_FORGET = re.compile(
    r"^\W*yes\W+(?:please\W+)?forget (?:everything|it all|all)\b", re.IGNORECASE)
CONFIRM_WINDOW_S = 600.0
FORGET_ALL_ASKS = (
    "Nothing is deleted yet: deleting everything about them needs their own confirmation."
    " Ask them to reply 'yes, forget everything' if that is what they want."
)
ANONYMOUS = "The person asking is anonymous here; nothing is stored about them."


def what_do_you_know_about_me(identity: IdentityBackend) -> Tool[Caller]:
    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        person = _person(caller)
        facts = await facts_of(identity, caller.known_as, caller.viewer)
        lines = [f"- [{fact.id}] {quoted(fact.text)}" for fact in facts]
        return Answer([{"id": fact.id, "fact": fact.text, "learned": when(fact.at)}
                       for fact in facts],
                      "\n".join(lines) or "Nothing is stored about them.",
                      Audit("about_me", person.key, f"{len(facts)} facts"))

    return Tool(ABOUT_ME, (
        "What the identity memory holds about the person asking: facts learned in"
        " conversation, with ids, as far as they may read them from here. Only ever about"
        " themselves; use it when they ask what is known or remembered about them."
    ), {"type": "object", "properties": {}}, handle,
        step_title="Reading what I know about you")


def forget_about_me(
    identity: IdentityBackend,
    *,
    on_forget: Callable[[Person], None] | None = None,
    stop_ingest: Callable[[Person], Awaitable[object]] | None = None,
    audit: Offloaded[AuditLog] | None = None,
) -> Tool[Caller]:
    """``stop_ingest`` runs before everything is forgotten: nothing said before (this very
    turn included) is sent to the identity backend afterwards (layers/identity/tombstones).
    ``audit``: each forget is written there, as the person's own, from where they asked."""
    confirmations = ForgetConfirmations()

    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        person = _person(caller)
        fact_id = arguments.optional_text("fact_id")
        if fact_id is not None:
            said = f"deleted {await forget_fact_of(identity, caller.known_as, fact_id)} fact(s)"
            action, target = "fact.forget", f"fact:{fact_id}"
        elif not confirmations.confirmed(person, caller):
            return Answer(FORGET_ALL_ASKS)
        else:
            said = (await forget_all_of(identity, caller.known_as, first=stop_ingest)).describe()
            action, target = "person.forget", f"person:{person.key}"
        if audit is not None:
            await audit.run(AuditLog.record, actor=caller.actor, action=action, target=target,
                            origin=caller.origin, detail=said)
        if on_forget is not None:
            for known in caller.known_as:
                on_forget(known)
        log.info("forgot at the person's request: %s", said)
        return Answer(f"Done: {said} about them.")

    return Tool(FORGET_ME, (
        "Delete what the identity memory holds about the person asking: one fact by its id"
        f" from {ABOUT_ME}, or everything when no id is given. Only when they ask you to"
        " forget something about them. Forgetting everything needs the person's own"
        " confirmation in their next message ('yes, forget everything')."
    ), {
        "type": "object",
        "properties": {"fact_id": {"type": "string", "description": "omit to forget all"}},
    }, handle, step_title="Forgetting what you asked", changes=True)


def _person(caller: Caller) -> Person:
    if caller.person is None:
        raise BadInput(ANONYMOUS)
    return caller.person


class ForgetConfirmations:
    """Whether deleting everything about a person is their own wish, confirmed.

    A model's word is not enough (stored text could talk it into the call): the first
    call only asks, and the delete runs when a later message of the person's own begins
    "yes, forget everything", within CONFIRM_WINDOW_S of the ask. Decided: words, not a
    button, so the same confirmation works in Slack and in the terminal; the ask is this
    process's (with several replicas a confirmation that lands on another one is asked
    again: nothing is deleted on a guess). A caller with no words of their own (over
    MCP) is never confirmed.
    """

    def __init__(self) -> None:
        # Whose "forget everything" was asked for, in which of their turns (its time).
        self._asked: dict[str, float] = {}

    def confirmed(self, person: Person, caller: Caller) -> bool:
        asked = self._asked.get(person.key)
        later = asked is not None and asked < caller.at <= asked + CONFIRM_WINDOW_S
        if later and CONFIRM_FORGET.match(caller.words):
            del self._asked[person.key]
            return True
        if asked is None or caller.at > asked:
            self._asked[person.key] = caller.at
        return False
