"""``recall``: search earlier conversations as the person asking may read them from where
they ask (``Caller.viewer``): a turn's speaker in the turn's place, MCP's asker as in
their DM with Thoth."""

from __future__ import annotations

import time
from typing import Any

from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.tools import CONVERSATION, Answer, Audit, Caller, Tool
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.data import place_said, when
from layers.episodic.episode import Hit
from layers.episodic.memory import EpisodicMemory
from layers.episodic.named_dates import zone_named
from layers.episodic.recall_uses import RecallUse
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from layers.shared.quoting import quoted

RECALL = "recall"
# A call reads at most this many (or its surface's own default, if that is more).
MAX_RESULTS = 20
NOTHING_FOUND = "No matching episodes."
DESCRIPTION = (
    "Search the team's memory (earlier conversations Thoth took part in) for what is"
    " relevant to the query, as the person asking may read it from where they ask"
    " (visibility rules apply): best first, each saying who said it, when and where. Use"
    " it when something said earlier may matter and is not in front of you."
)


def recall(episodic: Offloaded[EpisodicMemory], *, k: int) -> Tool[Caller]:
    """``k``: how many a call that names none reads (each surface says its own)."""
    most = max(MAX_RESULTS, k)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "k": {"type": "integer", "minimum": 1, "maximum": most, "default": k,
                  "description": "how many results at most"},
        },
        "required": ["query"],
    }

    async def handle(caller: Caller, arguments: Arguments) -> Answer:
        query = arguments.text("query")
        many = arguments.number("k", default=k, least=1, most=most)
        zone = zone_named(caller.zone)
        hits = await episodic.run(lambda memory: memory.recall(query, caller.viewer, k=many,
                                                               zone=zone))
        if hits and caller.origin != CONVERSATION:
            # An MCP client's recall, in each episode's access log (a turn's recalls are
            # recorded with its session, after its reply: pipeline.py).
            viewer, ids = caller.viewer, [hit.episode.id for hit in hits]
            use = RecallUse(caller.origin, Place(viewer.team, viewer.channel,
                                                 viewer.channel_type),
                            caller.person.user if caller.person else None,
                            caller.at or time.time(), via=caller.origin.partition(" ")[0])
            await episodic.run(lambda memory: memory.uses.record(ids, use))
        return Answer([_found(hit) for hit in hits],
                      quoted(episodes_text(hits)) or NOTHING_FOUND,
                      Audit(RECALL, query, f"{len(hits)} results"))

    return Tool(RECALL, DESCRIPTION, schema, handle, step_title="Searching memory")


def _found(hit: Hit) -> dict[str, Any]:
    episode = hit.episode
    return {
        "id": episode.id,
        "said_by": episode.user_name or episode.user,
        "when": when(episode.created_at),
        "where": place_said(episode.channel_type, episode.channel),
        "thread": episode.thread_ts,
        "text": episode.user_text,
        "reply_summary": episode.summary,
        "score": round(hit.score, 4),
        # Each file shared with it: what it is, where it is opened, and the passage of it
        # the query is about.
        "files": [{"name": file.name, "kind": file.kind, "type": file.mimetype,
                   "permalink": file.permalink, "passage": file.passage}
                  for file in hit.files],
    }
