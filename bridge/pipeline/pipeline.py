"""One turn end to end (DESIGN.md "One turn", steps 3-7).

Lock the session; gather persona, transcript, user model and related episodes
concurrently, each under its own deadline; build the prompt; stream the model's
answer (answering its tool calls) to the transport's sink; then, with the reply
already shown, write the transcript and the episode.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from bridge import messages
from bridge.model.asking import asks
from bridge.model.pricing import Usage
from bridge.model.protocol import (
    LanguageModel,
    ModelAsksToWait,
    ModelRefusedRequest,
    ModelUnavailable,
    PromptTooLong,
    SpendLimitReached,
)
from bridge.pipeline.after_reply import AfterReply
from bridge.pipeline.deadlines import MissedDeadlines, within_deadline
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.sink import ReplySink, ReplyStopped, Step, StepStatus, show_step
from bridge.pipeline.tool_round import run_tool_round
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.turn import Turn
from layers.episodic.episode import Episode, Hit
from layers.episodic.memory import EpisodicMemory
from layers.episodic.summary import summarize_reply
from layers.errors import CostCapReached, PersonCapReached
from layers.identity.ingest_queue import IngestQueue
from layers.identity.protocol import TurnMessages
from layers.identity.user_models import UserModels
from layers.notes.store import Note, NoteStore
from layers.procedural.persona import PersonaLoader
from layers.procedural.skills import SkillLibrary
from layers.redaction.stream import RedactingStream
from layers.working.budget import TrimmedTranscript, trim_to_budget
from layers.working.sessions import Session, SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn

log = logging.getLogger(__name__)

# Local sources answer in milliseconds; these bounds only stop a stuck disk or a
# model still loading from holding the reply hostage.
PERSONA_DEADLINE_S = 1.0
TRANSCRIPT_DEADLINE_S = 1.0
RELATED_EPISODES_DEADLINE_S = 2.0
NOTES_DEADLINE_S = 1.0
# A model that keeps asking for tools is cut off and its text so far is the reply.
MAX_TOOL_ROUNDS = 4
MEMORY_STEP = "related-episodes"
# Stop reasons that end a reply short of an answer (the Messages API reference).
STOP_NOTICES = {
    "max_tokens": messages.REPLY_CUT,
    # A server tool's loop paused; Thoth offers no server tools, so it is an unfinished
    # reply, shown as such rather than continued.
    "pause_turn": messages.REPLY_PAUSED,
    "model_context_window_exceeded": messages.CONTEXT_FULL,
    "refusal": messages.MODEL_REFUSED,
}


@dataclass(frozen=True)
class PipelineConfig:
    recall_top_k: int = 3
    transcript_token_budget: int = 6000
    user_model_timeout_s: float = 1.5
    max_tokens: int = 2048
    effort: str | None = None


@dataclass
class TurnTimings:
    """Monotonic clock readings of one turn, for the overhead benchmark."""

    started: float = 0.0
    context_ready: float = 0.0
    model_seconds: float = 0.0
    last_token: float = 0.0
    shown: float = 0.0
    recorded: float = 0.0


@dataclass(frozen=True)
class TurnOutcome:
    session_id: str
    reply: str
    ok: bool
    episode_id: str | None = None
    cost_usd: float = 0.0
    first_turn: bool = False
    timings: TurnTimings = field(default_factory=TurnTimings)


@dataclass
class _Answer:
    text: str = ""
    ok: bool = True
    stopped: bool = False
    # What to show at the end when the reply already streamed and then fell short (cut at
    # the length limit, refused): the transcript keeps the text and this note together.
    notice: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    model: str = ""


class TurnPipeline:
    """Runs turns; one at a time per session, sessions concurrently."""

    def __init__(
        self,
        *,
        sessions: SessionStore,
        transcript: TranscriptStore,
        persona: PersonaLoader,
        skills: SkillLibrary | None,
        episodic: EpisodicMemory | None,
        model: LanguageModel,
        config: PipelineConfig,
        user_models: UserModels | None = None,
        identity_ingest: IngestQueue | None = None,
        after_reply: AfterReply | None = None,
        notes: NoteStore | None = None,
        tools: ToolBox | None = None,
    ) -> None:
        """``model`` comes with its cost cap and charge around it (``MeteredModel``);
        ``tools`` are the ones the model may call (``bridge/app.py`` builds the list)."""
        self._sessions = sessions
        self._transcript = transcript
        self._persona = persona
        self._skills = skills
        self._episodic = episodic
        self._model = model
        self._config = config
        self._user_models = user_models
        self._notes = notes
        self._tools = tools or ToolBox()
        self._after = after_reply or AfterReply(transcript, sessions, episodic, identity_ingest)
        self._locks = KeyedLocks()
        self._misses = MissedDeadlines()

    @property
    def model(self) -> LanguageModel:
        return self._model

    async def handle(
        self, turn: Turn, sink: ReplySink, *, session: Session | None = None
    ) -> TurnOutcome:
        """Answer ``turn`` through ``sink``; never raises for a model or layer failure.

        ``session`` is the turn's open session when the transport has opened it already.
        """
        timings = TurnTimings(started=time.monotonic())
        if session is None:
            session = await asyncio.to_thread(self._sessions.open, turn.session_key, turn.place)
        async with self._locks.hold(session.id):
            await sink.thinking()
            first_turn = await asyncio.to_thread(self._transcript.count, session.id) == 0
            context = await self._gather(turn, session, sink, first_turn=first_turn)
            timings.context_ready = time.monotonic()
            answer = _Answer(model=self._model.name)
            try:
                await self._answer(answer, turn, session, context, sink, timings)
            except asyncio.CancelledError:
                # The transport gave up on the turn (Ctrl-C, shutdown): what was already
                # spent still counts toward the cap, and the message is kept.
                _failed(answer, messages.INTERRUPTED)
                await asyncio.shield(self._record(turn, session, answer))
                raise
            timings.last_token = time.monotonic()
            try:
                await sink.finish(answer.notice or answer.text, ok=answer.ok)
            except ReplyStopped:
                # Stop pressed while the reply was being closed: not a complete answer.
                answer.stopped = True
                _failed(answer, f"{answer.text}\n\n{messages.STOPPED}".strip())
            timings.shown = time.monotonic()
            episode_id = await self._record(turn, session, answer)
            timings.recorded = time.monotonic()
        log.info(
            "turn done session=%s ok=%s first=%s cost=%.5f",
            session.id,
            answer.ok,
            first_turn,
            answer.cost_usd,
        )
        return TurnOutcome(
            session.id, answer.text, answer.ok, episode_id, answer.cost_usd, first_turn, timings
        )

    async def drain(self, timeout_s: float = 10.0) -> int:
        """Let background writes finish (at shutdown); returns how many did not."""
        return await self._after.drain(timeout_s)

    async def _gather(
        self, turn: Turn, session: Session, sink: ReplySink, *, first_turn: bool
    ) -> GatheredContext:
        procedural, transcript, user_model, related, notes = await asyncio.gather(
            within_deadline(
                "persona and skills",
                PERSONA_DEADLINE_S,
                asyncio.to_thread(self._procedural),
                self._misses,
            ),
            within_deadline(
                "transcript",
                TRANSCRIPT_DEADLINE_S,
                asyncio.to_thread(self._transcript_of, session),
                self._misses,
            ),
            self._user_model(turn),
            self._related_episodes(turn, sink, first_turn=first_turn),
            self._memory_notes(turn),
        )
        persona, skill_index = procedural or (None, None)
        return GatheredContext(
            persona=persona,
            skill_index=skill_index,
            user_model=user_model,
            related=related,
            transcript=transcript,
            notes=notes,
        )

    def _procedural(self) -> tuple[str, str | None]:
        """The persona stack and the skill index (L4), both cached until files change."""
        index = self._skills.index_text() if self._skills is not None else None
        return self._persona.load().render(), index

    def _transcript_of(self, session: Session) -> TrimmedTranscript:
        turns = self._transcript.turns(session.id)
        return trim_to_budget(turns, self._config.transcript_token_budget)

    async def _memory_notes(self, turn: Turn) -> Sequence[Note] | None:
        """The kept notes the speaker may read here (never a pending one)."""
        if self._notes is None:
            return None
        return await within_deadline(
            "memory-notes", NOTES_DEADLINE_S,
            asyncio.to_thread(self._notes.kept_for, turn.viewer), self._misses,
        )

    async def _user_model(self, turn: Turn) -> str | None:
        person = turn.person
        if self._user_models is None or person is None:
            return None
        return await within_deadline(
            "user-model",
            self._config.user_model_timeout_s,
            self._user_models.for_message(person, turn.text, turn.viewer),
            self._misses,
        )

    async def _related_episodes(
        self, turn: Turn, sink: ReplySink, *, first_turn: bool
    ) -> Sequence[Hit] | None:
        if not first_turn or self._episodic is None:
            return None
        episodic = self._episodic
        await show_step(sink, Step(MEMORY_STEP, messages.STEP_SEARCHING_MEMORY, "in_progress"))
        found = await within_deadline(
            "related-episodes",
            RELATED_EPISODES_DEADLINE_S,
            asyncio.to_thread(
                episodic.recall, turn.text, turn.viewer, k=self._config.recall_top_k
            ),
            self._misses,
        )
        status: StepStatus = "error" if found is None else "complete"
        await show_step(sink, Step(MEMORY_STEP, messages.STEP_SEARCHING_MEMORY, status))
        return found

    async def _answer(
        self,
        answer: _Answer,
        turn: Turn,
        session: Session,
        context: GatheredContext,
        sink: ReplySink,
        timings: TurnTimings,
    ) -> None:
        """Fill ``answer``: the streamed reply, or a failure message, and what it cost."""
        request = build_request(
            turn,
            context,
            model=self._model.name,
            tools=self._tools.specs,
            max_tokens=self._config.max_tokens,
            effort=self._config.effort,
            session_id=session.id,
        )
        reply = _ReplyStream(sink)
        try:
            for round_number in range(MAX_TOOL_ROUNDS + 1):
                reply.next_round()
                started = time.monotonic()
                result = await self._model.respond(request, reply.write)
                timings.model_seconds += time.monotonic() - started
                answer.usage = answer.usage + result.usage
                answer.cost_usd += result.cost_usd
                notice = STOP_NOTICES.get(result.stop_reason or "")
                if notice is None and result.tool_calls and round_number == MAX_TOOL_ROUNDS:
                    notice = messages.TOOL_ROUNDS_USED.format(rounds=MAX_TOOL_ROUNDS)
                if notice is not None:
                    # Cut, refused, out of room or out of tool rounds: shown as such, never
                    # run (a tool call cut mid-input), never stored as an answer or replayed.
                    log.warning("model stopped (%s) in session %s", notice, session.id)
                    answer.notice = notice
                    await reply.flush()
                    _failed(answer, f"{reply.text}\n\n{notice}".strip())
                    return
                if not result.tool_calls:
                    break
                request = await run_tool_round(request, result, turn, sink, self._tools)
            await reply.flush()
        except CostCapReached as capped:
            told = (messages.PERSON_CAP_REACHED if isinstance(capped, PersonCapReached)
                    else messages.COST_CAP_REACHED)
            _failed(answer, told.format(cap=capped.cap_usd))
            return
        except ReplyStopped:
            log.info("the reply was stopped by its reader in session %s", session.id)
            answer.stopped = True
            _failed(answer, f"{reply.text}\n\n{messages.STOPPED}".strip())
            return
        except ModelUnavailable as error:
            _failed(answer, _told_for(error, session.id))
            return
        except Exception:
            log.exception("turn failed for session %s", session.id)
            _failed(answer, messages.INTERNAL_ERROR)
            return
        if not reply.text:
            # Only tool calls and no words (or an empty answer): not a reply to store or
            # replay — the API refuses an empty assistant message in the transcript.
            log.error("the model gave no text for session %s", session.id)
            _failed(answer, messages.EMPTY_REPLY)
            return
        answer.text = reply.text

    async def _record(self, turn: Turn, session: Session, answer: _Answer) -> str | None:
        await self._after.record_turn(
            session.id,
            TranscriptTurn(
                user_text=turn.text,
                reply_text=answer.text,
                ok=answer.ok,
                user=turn.user,
                user_name=turn.user_name,
                created_at=turn.received_at,
            ),
        )
        if not answer.ok:
            return None
        if turn.person is not None:
            self._after.learn(
                TurnMessages(turn.person, session.id, turn.text, answer.text, turn.received_at)
            )
        if self._model.memory_only and asks(turn.text):
            # Decided: a question that got no answer (no model) carries nothing to recall,
            # and stored it would outrank the turns that hold the facts it asked about.
            # The transcript keeps it; with a model the reply's summary makes it worth
            # an episode.
            return None
        episode = Episode(
            id=uuid.uuid4().hex,
            user_text=turn.text,
            # The offline responder's text is about the missing model, not an answer.
            summary="" if self._model.memory_only else summarize_reply(answer.text),
            created_at=turn.received_at,
            team=turn.place.team,
            channel=turn.place.channel,
            channel_type=turn.place.channel_type,
            thread_ts=turn.place.thread_ts,
            user=turn.user,
            user_name=turn.user_name,
            session_id=session.id,
            cost_usd=answer.cost_usd,
            reply_model=answer.model,
        )
        self._after.remember(episode)
        return episode.id


def _told_for(error: ModelUnavailable, session_id: str) -> str:
    """What the person reads when the model failed, and the line the operator gets."""
    if isinstance(error, SpendLimitReached):
        log.error("model spend limit for session %s: %s", session_id, error)
        return messages.MODEL_SPEND_LIMIT
    if isinstance(error, PromptTooLong):
        log.warning("the prompt no longer fits the model in session %s: %s", session_id, error)
        return messages.CONTEXT_FULL
    if isinstance(error, ModelRefusedRequest):
        # Never goes away by itself: the operator has something to fix (doctor says it).
        log.error("model refused the request for session %s: %s", session_id, error)
        return messages.MODEL_MISCONFIGURED
    if isinstance(error, ModelAsksToWait):
        log.warning("model asks to wait %.0fs in session %s", error.seconds, session_id)
        return messages.MODEL_ASKS_TO_WAIT.format(seconds=round(error.seconds))
    log.error("model failed for session %s: %s", session_id, error)
    return messages.MODEL_FAILED


class _ReplyStream:
    """Forwards streamed text to the sink, redacted, and keeps the whole reply.

    The model may repeat a secret the person pasted; it is redacted before anyone
    sees it, whichever transport shows the reply.
    """

    def __init__(self, sink: ReplySink) -> None:
        self._sink = sink
        self._redacting = RedactingStream()
        self._new_round = False
        self._started = False

    def next_round(self) -> None:
        # Text after a tool call starts a new paragraph.
        self._new_round = self._started

    async def write(self, text: str) -> None:
        if not text:
            return
        if self._new_round:
            self._new_round = False
            text = "\n\n" + text
        self._started = True
        shown = self._redacting.feed(text)
        if shown:
            await self._sink.stream(shown)

    async def flush(self) -> None:
        """Show what was held back to be redacted with what followed it."""
        rest = self._redacting.end()
        if rest:
            await self._sink.stream(rest)

    @property
    def text(self) -> str:
        return self._redacting.text.strip()


def _failed(answer: _Answer, message: str) -> _Answer:
    answer.text = message
    answer.ok = False
    return answer
