"""Every store the Slack transport reads or writes, built once (``slack_stores``).

The transport's listeners and handlers are coroutines on a loop: they are handed these
``Offloaded`` (``layers/shared/offloaded.py``) and reach them only through ``run``, in a
worker thread. Decided: one bundle for the transport rather than one per handler — the
handlers share most of it, and a use that spans stores (🗑️ forgets the episode, its
transcript turn and the notes drawn from it) is one hop to a thread, not several.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.access.tokens import McpTokens
from bridge.app import Thoth
from bridge.slack.duplicate_deliveries import SeenDeliveries
from bridge.slack.inbox import SlackInbox
from bridge.slack.reaction_effects import ReactionEffects
from bridge.slack.replies import SlackReplies
from bridge.slack.thread_contexts import ThreadContexts
from bridge.slack_api.note_cards import NoteCardStore
from bridge.slack_api.skill_cards import CardStore
from layers.episodic.memory import EpisodicMemory
from layers.episodic.store import EpisodeStore
from layers.identity.tombstones import Tombstones
from layers.notes.governance import NoteGovernance
from layers.procedural.drafts import SkillDrafts
from layers.shared.audit.log import AuditLog
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore
from reflection.followups import Followups


@dataclass(frozen=True)
class SlackStores:
    # The memory the conversations use and the reactions govern.
    sessions: SessionStore
    transcript: TranscriptStore
    episodic: EpisodicMemory
    # What suggested prompts draw from (None when episodic memory is off).
    recent_episodes: EpisodeStore | None
    notes: NoteGovernance
    drafts: SkillDrafts
    followups: Followups
    # Who asked to be forgotten: nothing they said before it is learned again.
    tombstones: Tombstones
    # The transport's own records.
    replies: SlackReplies
    cards: CardStore
    note_cards: NoteCardStore
    effects: ReactionEffects
    contexts: ThreadContexts
    inbox: SlackInbox
    seen: SeenDeliveries
    # Each change a reaction or a click makes, as the console's are (layers/shared/audit).
    audit: AuditLog
    # People's tokens for MCP over HTTP (`/thoth token`).
    mcp_tokens: McpTokens


def slack_stores(thoth: Thoth) -> SlackStores:
    db, settings = thoth.db, thoth.settings
    return SlackStores(
        sessions=thoth.sessions,
        transcript=thoth.transcript,
        episodic=thoth.episodic,
        recent_episodes=None if settings.episodic_disabled else thoth.episodic.store,
        notes=thoth.notes,
        drafts=thoth.drafts,
        followups=thoth.followups,
        tombstones=thoth.tombstones,
        replies=SlackReplies(db),
        cards=CardStore(db),
        note_cards=NoteCardStore(db),
        effects=ReactionEffects(db),
        contexts=ThreadContexts(db),
        inbox=SlackInbox(db, owner=thoth.leases.owner, lease_s=settings.inbox_lease_s),
        seen=SeenDeliveries(db),
        audit=thoth.audit,
        mcp_tokens=thoth.mcp_tokens,
    )
