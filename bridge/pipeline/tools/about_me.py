"""``what_do_you_know_about_me`` and ``forget_about_me``: the person asking reads what
identity memory holds about them, or deletes what Thoth keeps of them — only ever about
themselves, and read only as they may from where they ask (a DM's facts never come up in
a channel)."""

from __future__ import annotations

import logging
import re

from bridge.forget_person import PersonForgetting
from bridge.pipeline.tools import Answer, Audit, Caller, Tool
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.data import when
from layers.identity.known_as import facts_of
from layers.identity.protocol import IdentityBackend, Person
from layers.shared.errors import BadInput
from layers.shared.quoting import quoted

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


def forget_about_me(forgetting: PersonForgetting) -> Tool[Caller]:
    """Forgets as every "forget me" does (``bridge/forget_person.py``): their facts, their
    DMs with Thoth, their notes; it says what it kept and why."""
    confirmations = ForgetConfirmations()

    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        person = _person(caller)
        fact_id = arguments.optional_text("fact_id")
        if fact_id is not None:
            deleted = await forgetting.forget_fact(caller.known_as, fact_id,
                                                   actor=caller.actor, origin=caller.origin)
            said = f"deleted {deleted} fact(s)"
        elif not confirmations.confirmed(person, caller):
            return Answer(FORGET_ALL_ASKS)
        else:
            said = (await forgetting.forget(caller.known_as, actor=caller.actor,
                                            origin=caller.origin)).describe()
        log.info("forgot at the person's request: %s", said)
        return Answer(f"Done: {said}")

    return Tool(FORGET_ME, (
        "Delete what Thoth keeps about the person asking: one fact by its id from"
        f" {ABOUT_ME}, or everything when no id is given (their facts, their DMs with"
        " Thoth, their notes; what they said in channels stays, and the answer says so)."
        " Only when they ask you to forget something about them. Forgetting everything"
        " needs the person's own confirmation in their next message ('yes, forget"
        " everything')."
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
