"""One turn end to end (DESIGN.md "One turn", steps 3-7).

Lock the session; gather persona, transcript, user model and related episodes
concurrently, each under its own deadline; build the prompt; let the model answer
through the transport's sink (``answering.py``: the stream, the tool rounds, what a
reply that fell short says); then, with the reply already shown, write the transcript
and the episode (``turn_episode.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bridge import messages
from bridge.model.protocol import LanguageModel
from bridge.pipeline.after_reply import AfterReply
from bridge.pipeline.answering import Answer, answer_turn
from bridge.pipeline.deadlines import MissedDeadlines, within_deadline
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.reply_sink import ReplySink, ReplyStopped, Step, StepStatus, show_step
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.turn import Turn
from bridge.pipeline.turn_episode import episode_of
from layers.episodic.episode import Hit
from layers.episodic.memory import EpisodicMemory
from layers.episodic.named_dates import zone_named
from layers.episodic.recall_uses import RecallUse
from layers.identity.ingest_queue import IngestQueue
from layers.identity.protocol import TurnMessages
from layers.identity.user_models import UserModels
from layers.notes.store import Note, NoteStore
from layers.offloaded import Offloaded
from layers.procedural.persona import PersonaLoader
from layers.procedural.skills import SkillLibrary
from layers.working.budget import trim_to_budget
from layers.working.sessions import Session, SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn

log = logging.getLogger(__name__)

# Local sources answer in milliseconds; these bounds only stop a stuck disk or a
# model still loading from holding the reply hostage.
PERSONA_DEADLINE_S = 1.0
TRANSCRIPT_DEADLINE_S = 1.0
RELATED_EPISODES_DEADLINE_S = 2.0
NOTES_DEADLINE_S = 1.0
MEMORY_STEP = "related-episodes"


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


class TurnPipeline:
    """Runs turns; one at a time per session, sessions concurrently."""

    def __init__(
        self,
        *,
        sessions: Offloaded[SessionStore],
        transcript: Offloaded[TranscriptStore],
        persona: Offloaded[PersonaLoader],
        skills: Offloaded[SkillLibrary] | None,
        episodic: Offloaded[EpisodicMemory] | None,
        model: LanguageModel,
        config: PipelineConfig,
        user_models: UserModels | None = None,
        identity_ingest: IngestQueue | None = None,
        after_reply: AfterReply | None = None,
        notes: Offloaded[NoteStore] | None = None,
        tools: ToolBox | None = None,
    ) -> None:
        """``model`` comes with its cost cap and charge around it (``MeteredModel``);
        ``tools`` are the ones the model may call (``bridge/app.py`` builds the list).
        The stores come ``Offloaded``: a turn runs on the loop and reaches them only
        through a worker thread."""
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
            session = await self._sessions.run(
                lambda sessions: sessions.open(turn.session_key, turn.place))
        async with self._locks.hold(session.id):
            await sink.thinking()
            opened = session
            first_turn = await self._transcript.run(
                lambda transcript: transcript.count(opened.id)) == 0
            context = await self._gather(turn, session, sink, first_turn=first_turn)
            timings.context_ready = time.monotonic()
            answer = Answer(model=self._model.name)
            request = build_request(
                turn,
                context,
                model=self._model.name,
                tools=self._tools.specs,
                max_tokens=self._config.max_tokens,
                effort=self._config.effort,
                session_id=session.id,
            )
            try:
                await answer_turn(answer, self._model, request, turn, sink, self._tools,
                                  session.id)
            except asyncio.CancelledError:
                # The transport gave up on the turn (Ctrl-C, shutdown): what was already
                # spent still counts toward the cap, and the message is kept.
                answer.failed(messages.INTERRUPTED)
                await asyncio.shield(self._record(turn, session, answer))
                raise
            timings.model_seconds = answer.model_seconds
            timings.last_token = time.monotonic()
            try:
                await sink.finish(answer.notice or answer.text, ok=answer.ok)
            except ReplyStopped:
                # Stop pressed while the reply was being closed: not a complete answer.
                answer.stopped = True
                answer.failed(f"{answer.text}\n\n{messages.STOPPED}".strip())
            timings.shown = time.monotonic()
            episode_id = await self._record(turn, session, answer)
            timings.recorded = time.monotonic()
            if context.related:
                self._after.recalled(
                    [hit.episode.id for hit in context.related],
                    RecallUse(session.id, turn.place, turn.user, turn.received_at))
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
                self._procedural(),
                self._misses,
            ),
            within_deadline(
                "transcript",
                TRANSCRIPT_DEADLINE_S,
                self._transcript.run(lambda transcript: trim_to_budget(
                    transcript.turns(session.id), self._config.transcript_token_budget)),
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

    async def _procedural(self) -> tuple[str, str | None]:
        """The persona stack and the skill index (L4), both cached until files change."""
        index = (None if self._skills is None
                 else await self._skills.run(lambda skills: skills.index_text()))
        return await self._persona.run(lambda persona: persona.load().render()), index

    async def _memory_notes(self, turn: Turn) -> Sequence[Note] | None:
        """The kept notes the speaker may read here (never a pending one)."""
        if self._notes is None:
            return None
        return await within_deadline(
            "memory-notes", NOTES_DEADLINE_S,
            self._notes.run(lambda notes: notes.kept_for(turn.viewer)), self._misses,
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
            episodic.run(
                lambda memory: memory.recall(turn.text, turn.viewer, k=self._config.recall_top_k,
                                             zone=zone_named(turn.zone))
            ),
            self._misses,
        )
        status: StepStatus = "error" if found is None else "complete"
        await show_step(sink, Step(MEMORY_STEP, messages.STEP_SEARCHING_MEMORY, status))
        return found

    async def _record(self, turn: Turn, session: Session, answer: Answer) -> str | None:
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
        if answer.ok and turn.person is not None:
            self._after.learn(
                TurnMessages(turn.person, session.id, turn.text, answer.text, turn.received_at)
            )
        episode = episode_of(turn, session.id, answer, memory_only=self._model.memory_only)
        if episode is None:
            return None
        self._after.remember(episode)
        return episode.id
