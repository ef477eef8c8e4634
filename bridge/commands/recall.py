"""`/recall QUERY`: what memory holds on a query, as the person may read it from here."""

from __future__ import annotations

import re

from bridge import messages
from bridge.commands import Command, CommandServices, Invocation, Reply, Where
from layers.episodic.named_dates import zone_named
from layers.shared.errors import BadInput


async def recall(invocation: Invocation, services: CommandServices) -> Reply:
    query = invocation.args.strip()
    if not query:
        return Reply(messages.RECALL_USAGE, mistake=True)
    if invocation.where is Where.TERMINAL and services.drain is not None:
        # One person typing: their last turn's episode may still be on its way to the
        # store, and "/recall" right after a turn should find that turn too.
        await services.drain()
    viewer, k, zone = invocation.viewer, services.recall_top_k, zone_named(invocation.zone)
    try:
        hits = await services.episodic.run(
            lambda episodic: episodic.recall(query, viewer, k=k, zone=zone))
    except BadInput as error:
        return Reply(str(error), mistake=True)
    if not hits:
        return Reply(messages.NOTHING_REMEMBERED)
    return Reply(hits=hits)


COMMAND = Command(
    name="recall",
    help="Search what Thoth remembers (only what you may see from here)",
    usage_hint="what did we decide about the deploy?",
    arguments="QUERY",
    handler=recall,
    ack=messages.RECALL_ACK,
    in_thread=re.compile(r"^\s*/?recall\s+(?P<args>.+)$", re.IGNORECASE | re.DOTALL),
    terminal=True,
)
