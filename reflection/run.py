"""One session's reflection, start to finish (what ``thoth reflect SESSION_ID`` runs).

Claim the run; make the report once (a retry reuses it), redacted before it is
stored or shown anywhere; fan it out; record done or failed. Writes to the
layers happen only here, in a process of its own, so a hung or crashing
reflection cannot hurt the bridge.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from layers.shared.errors import CostCapReached, ThothError
from layers.shared.redaction import redact
from layers.working.sessions import Session, SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn
from reflection.facts_in_their_own_words import rests_on
from reflection.fanout import FanoutResult, Writers, dm_person, fan_out
from reflection.reflector import Reflector
from reflection.report import Reflection
from reflection.session_input import SessionInput
from reflection.state import ReflectionState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    state: str
    report: Reflection | None
    fanout: FanoutResult | None
    error: str | None = None


def reflect_session(
    session_id: str,
    *,
    sessions: SessionStore,
    transcript: TranscriptStore,
    state: ReflectionState,
    reflector: Reflector,
    writers: Writers,
    existing_skills: list[str],
    claimed: bool = False,
) -> RunResult:
    """Reflect on the session if it is due; ``claimed``: a worker has claimed the run
    for this process already (``ReflectionState.claim_next``)."""
    session = sessions.get(session_id)
    if session is None:
        raise ThothError(f"no session {session_id!r}")
    if claimed:
        row = state.claimed(session_id)
    else:
        state.queue(session_id)
        row = state.claim(session_id)
    if row is None:
        current = state.get(session_id)
        return RunResult(current.state if current else "unknown", None, None, "not due")
    report = row.report
    try:
        turns = transcript.turns(session_id)
        speakers = sorted({turn.user for turn in turns if turn.user})
        if report is None:
            session_input = _input(session, turns, speakers, writers, existing_skills)
            try:
                made, raw = reflector.reflect(session_input)
            except CostCapReached as capped:
                log.warning("reflection on session %s waits: %s", session_id, capped)
                state.postpone(session_id, reason=str(capped))
                return RunResult("failed", None, None, str(capped))
            except ThothError as refused:
                state.finish(session_id, error=str(refused))
                return RunResult("failed", None, None, str(refused))
            report = _for_speakers(_redacted(made), session_input)
            state.save_report(session_id, report, redact(raw) if raw else None)
        result = fan_out(session, report, state, writers, speakers)
    except Exception as crash:
        log.exception("reflection on session %s failed", session_id)
        state.finish(session_id, error=f"{type(crash).__name__}: {crash}")
        raise
    error = f"writers failed: {', '.join(result.failed)}" if result.failed else None
    state.finish(session_id, error=error)
    return RunResult("failed" if error else "done", report, result, error)


def summary_text(result: RunResult, cost_usd: float) -> str:
    """The closing summary posted in the thread after ``/done``."""
    if result.error == "not due":
        return "Session ended. Its reflection is already under way or done."
    if result.report is None or result.fanout is None:
        return f"Session ended. Reflection did not finish ({result.error}); it will be retried."
    parts = [f"Session ended — outcome: {result.report.outcome}, cost ${cost_usd:.4f}."]
    if result.fanout.notes_saved:
        parts.append(f"Saved {result.fanout.notes_saved} note(s) to memory.")
    if result.fanout.notes_pending:
        parts.append(f"{result.fanout.notes_pending} memory note(s) await a founder's approval.")
    if result.fanout.draft_id:
        parts.append(f"Skill draft {result.report.skill_slug} awaits approval.")
    if not (result.fanout.notes_saved or result.fanout.notes_pending or result.fanout.draft_id):
        parts.append("Nothing new to keep.")
    return " ".join(parts)


def _input(
    session: Session, turns: list[TranscriptTurn], speakers: list[str], writers: Writers,
    skills: list[str],
) -> SessionInput:
    return SessionInput(
        session.id,
        session.place,
        turns,
        feedback=[int(value) for value in writers.episodes.session_feedback(session.id)],
        existing_skills=skills,
        # Only notes that may be read where the session was: they go into its prompt.
        recent_notes=[note.text for note in writers.notes.visible_from(
            session.place, dm_person(session, speakers))],
    )


def _for_speakers(report: Reflection, session: SessionInput) -> Reflection:
    """User-model updates keyed by the speakers' ids; any other key is dropped (the model
    may name a person; a peer nobody can see or forget must not be created), and so is a
    fact that does not rest on that person's own words in the session."""
    updates: dict[str, list[str]] = {}
    for key, items in report.user_model_updates.items():
        person = session.person_id(key)
        if person is None:
            log.warning("reflection named %r, who did not speak in the session; dropped", key)
            continue
        said = [turn.user_text for turn in session.turns if turn.user == person]
        own = [item for item in items if rests_on(item, said)]
        if len(own) < len(items):
            # Someone else's words about them are not who they are.
            log.warning("reflection: %d fact(s) about %s not in their own words; dropped",
                        len(items) - len(own), person)
        updates.setdefault(person, []).extend(own)
    return report.model_copy(update={"user_model_updates": updates})


def _redacted(report: Reflection) -> Reflection:
    """The report with every text redacted: it feeds MEMORY.md, DMs, Honcho and logs."""
    data = report.model_dump()
    for key in ("what_worked", "what_didnt", "skill_description", "skill_body"):
        if isinstance(data.get(key), str):
            data[key] = redact(data[key])
    data["memory_notes"] = [redact(note) for note in report.memory_notes]
    data["persona_observations"] = [redact(item) for item in report.persona_observations]
    data["user_model_updates"] = {
        peer: [redact(item) for item in items] for peer, items in report.user_model_updates.items()
    }
    return Reflection.model_validate(data)
