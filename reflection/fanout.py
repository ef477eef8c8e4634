"""The reflection's fan-out: each writer independent, each applied once per session.

A writer that fails is logged and the others go on; the run is then "failed" and
a retry applies only the writers that had not finished (``reflection_writes``).
Idempotent where a crash could land between a write and its record: memory notes
(the same words proposed twice in one place are one note), the skill draft (one per session and
slug), user-model updates (duplicates are merged by the identity layer) and the
follow-up (one per session). A founder's DM is recorded per founder, so at worst
one founder gets one message twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from layers.episodic.store import EpisodeStore
from layers.identity.protocol import IdentityBackend, Person
from layers.identity.tombstones import Tombstones
from layers.notes.governance import NoteGovernance
from layers.procedural.drafts import SkillDrafts, is_tool_name
from layers.working.sessions import Session
from reflection.followups import Followups
from reflection.notify import Notifier
from reflection.report import MAX_MEMORY_NOTES, Reflection
from reflection.state import ReflectionState

log = logging.getLogger(__name__)

FOLLOWUP_MIN_S = 30
FOLLOWUP_MAX_S = 30 * 86_400


@dataclass
class FanoutResult:
    applied: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    notes_saved: int = 0
    notes_pending: int = 0
    draft_id: str | None = None


@dataclass(frozen=True)
class Writers:
    followups: Followups
    episodes: EpisodeStore
    notes: NoteGovernance
    drafts: SkillDrafts
    identity: IdentityBackend | None
    notifier: Notifier
    founders: list[str]
    clock: Callable[[], float] = time.time
    # Who asked to be forgotten: what they said before it is not observed again.
    tombstones: Tombstones | None = None


def fan_out(
    session: Session, report: Reflection, state: ReflectionState, writers: Writers,
    speakers: Sequence[str] = (),
) -> FanoutResult:
    """``speakers``: who spoke in the session (a note drawn from it rests on their words)."""
    result = FanoutResult()
    done = state.written(session.id)
    steps: list[tuple[str, Callable[[], str | None]]] = [
        ("memory", lambda: _memory(session, report, writers, result, speakers)),
        ("skill", lambda: _skill(session, report, writers, result)),
        ("identity", lambda: _identity(session, report, writers)),
        ("followup", lambda: _followup(session, report, writers)),
    ]
    steps += [
        (f"persona:{founder}", lambda f=founder: _persona(f, report, writers))  # type: ignore[misc]
        for founder in writers.founders
    ]
    for name, write in steps:
        if name in done:
            result.applied.append(name)
            continue
        try:
            detail = write()
        except Exception as error:  # one writer's failure must not stop the others
            log.error("reflection writer %s failed for session %s: %s", name, session.id, error)
            result.failed.append(name)
            continue
        state.mark_written(session.id, name, detail)
        result.applied.append(name)
    return result


def _memory(
    session: Session, report: Reflection, writers: Writers, result: FanoutResult,
    speakers: Sequence[str],
) -> str | None:
    """Each note proposed in the session's place; a card for each that waits."""
    texts = [note for note in report.memory_notes if note.strip()][:MAX_MEMORY_NOTES]
    if not texts:
        return None
    # A DM's note belongs to the DM's person: only a DM with them may read it.
    person = dm_person(session, speakers)
    for text in texts:
        note = writers.notes.propose(
            text, session.place, user=person, author_name=None,
            source=f"reflection on session {session.id[:8]}", session_id=session.id,
            speakers=speakers,
        )
        if note.status == "kept":
            result.notes_saved += 1
        elif note.status == "proposed":
            result.notes_pending += 1
            writers.notifier.note_card(note, session.place)
    return str(len(texts))


def dm_person(session: Session, speakers: Sequence[str]) -> str | None:
    """The person of a DM session (its one speaker); None elsewhere."""
    if session.place.channel_type != "im" or len(speakers) != 1:
        return None
    return speakers[0]


def _skill(
    session: Session, report: Reflection, writers: Writers, result: FanoutResult
) -> str | None:
    if not (report.should_skill and report.skill_slug and report.skill_body):
        return None
    draft = writers.drafts.proposed_in(session.id, report.skill_slug)
    if draft is None:
        draft = writers.drafts.propose(
            report.skill_slug,
            report.skill_description or report.skill_slug,
            report.skill_body,
            proposed_by="reflection",
            session_id=session.id,
            # A name that is no team tool's is left out, not the skill.
            allowed_tools=tuple(tool for tool in report.skill_allowed_tools
                                if is_tool_name(tool)),
        )
    writers.notifier.skill_card(draft, session.place)
    result.draft_id = draft.id
    return draft.id


def _identity(session: Session, report: Reflection, writers: Writers) -> str | None:
    if writers.identity is None or not report.user_model_updates:
        return None
    for peer, updates in report.user_model_updates.items():
        person = Person(session.place.team, peer)
        if writers.tombstones is not None and writers.tombstones.said_before_forget(
            person, session.started_at
        ):
            continue  # the session holds words from before they asked to be forgotten
        asyncio.run(
            writers.identity.observe(
                person, list(updates), session_id=session.id, source="reflection"
            )
        )
    return str(len(report.user_model_updates))


def _followup(session: Session, report: Reflection, writers: Writers) -> str | None:
    if report.next_check_at is None:
        return None
    now = writers.clock()
    due = report.next_check_at.timestamp()
    due = min(max(due, now + FOLLOWUP_MIN_S), now + FOLLOWUP_MAX_S)
    text = f"Checking back on this thread, as planned. {report.what_didnt or ''}".strip()
    writers.followups.schedule(session, text, due_at=due, now=now)
    return str(due)


def _persona(founder: str, report: Reflection, writers: Writers) -> str | None:
    if not report.persona_observations:
        return None
    lines = "\n".join(f"• {item}" for item in report.persona_observations)
    writers.notifier.dm_founder(
        founder,
        "Persona observations from a session (not applied; edit the brain's persona files"
        f" if you agree):\n{lines}",
    )
    return None
