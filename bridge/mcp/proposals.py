"""``remember`` and ``propose_skill``: what a person proposes over MCP, a memory note or a
skill, waiting for a founder's approval on a Slack card.

Defined as every tool is (``bridge/pipeline/tools``), but MCP's own: they take MCP's
``Asker`` (where a note may go is asked of Slack with the asker's memberships,
``note_places.py``), and post the cards only MCP posts (``cards.py``); a turn proposes
notes and skills its own way (a 🧠 reaction, reflection).
"""

from __future__ import annotations

from typing import Any

import anyio

from bridge.mcp.asker import Asker
from bridge.mcp.cards import Cards
from bridge.mcp.note_places import DM, NotePlaces
from bridge.pipeline.tools import Answer, Audit, Tool
from bridge.pipeline.tools.arguments import Arguments
from bridge.pipeline.tools.data import place_said
from layers.notes.governance import NoteGovernance
from layers.notes.store import MAX_NOTE_CHARS
from layers.procedural.drafts import SkillDrafts
from layers.shared.errors import BadInput

WAITING = "waiting for a founder's approval"


def remember(notes: NoteGovernance, places: NotePlaces, cards: Cards) -> Tool[Asker]:
    async def handle(asker: Asker, arguments: Arguments) -> Answer:
        text, where = arguments.text("text"), arguments.text("where", DM)
        # Refused, not cut: the store keeps a note's first MAX_NOTE_CHARS, and a client
        # would be told its note was kept while its end was dropped. As editing refuses.
        line = " ".join(text.split())
        if len(line) > MAX_NOTE_CHARS:
            raise BadInput(f"a memory note is at most {MAX_NOTE_CHARS} characters; this"
                           f" one has {len(line)}")

        def propose() -> Answer:
            place = places.place(asker, where)
            note = notes.propose(text, place, user=asker.user,
                                 author_name=places.name_of(asker), source="MCP",
                                 session_id=None, speakers=[asker.user])
            waiting = note.status == "proposed"
            if waiting:
                cards.note_card(note, asker)
            return Answer({"id": note.id, "text": note.text,
                           "where": place_said(place.channel_type, place.channel),
                           "status": WAITING if waiting else note.status},
                          audit=Audit("remember", f"note:{note.id}", note.status))

        return await anyio.to_thread.run_sync(propose)

    return Tool("remember", (
        "Propose a memory note: one line the team should keep in mind (a decision, who"
        f" owns what, how something is done), at most {MAX_NOTE_CHARS} characters. It waits"
        " for a founder's approval, as a note proposed in Slack does, then Thoth keeps it"
        " where it was proposed. where: 'dm' (your DM with Thoth: only you), a public"
        " channel's id (everyone in the workspace), or over HTTP a private channel's id"
        " you are in (its members)."
    ), {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": MAX_NOTE_CHARS,
                     "description": "the note, one line"},
            "where": {"type": "string", "default": DM,
                      "description": f"'{DM}', or the id of a channel"},
        },
        "required": ["text"],
    }, handle, changes=True)


def propose_skill(drafts: SkillDrafts, cards: Cards) -> Tool[Asker]:
    async def handle(asker: Asker, arguments: Arguments) -> Answer:
        name, description = arguments.text("name"), arguments.text("description")
        instructions = arguments.text("instructions")

        def propose() -> Answer:
            draft = drafts.propose(name, description, instructions, proposed_by=asker.actor)
            data: dict[str, Any] = {"id": draft.id, "name": draft.slug,
                                    "version": draft.version, "status": WAITING,
                                    "cards_in_slack": cards.skill_card(draft, asker)}
            return Answer(data, audit=Audit("propose_skill", f"draft:{draft.id}",
                                            f"{draft.slug} {draft.version}"))

        return await anyio.to_thread.run_sync(propose)

    return Tool("propose_skill", (
        "Propose a skill: a procedure the team should follow (name: lowercase words joined"
        " by hyphens; description: what it is for, in a sentence; instructions: the steps,"
        " in Markdown). It becomes a draft the founders approve or reject in Slack; a name"
        " the team already has proposes its next version."
    ), {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "instructions": {"type": "string"},
        },
        "required": ["name", "description", "instructions"],
    }, handle, changes=True)
