"""One turn end to end (DESIGN.md "One turn", steps 3-7).

Lock the session; gather persona, transcript and the context sources' blocks
(``context/``) concurrently, each under its own deadline; build the prompt; let the
model answer through the transport's sink (``answering.py``: the stream, the tool
rounds, what a reply that fell short says); then, with the reply already shown, write
the transcript and the episode (``turn_episode.py``).

A turn the database has no room for (a full disk) is told so and not answered
(``storage_full.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace

from bridge import messages
from bridge.files.reading import Read
from bridge.model.catalogue import CATALOGUE
from bridge.model.protocol import LanguageModel, ModelRequest
from bridge.pipeline.after_reply import AfterReply
from bridge.pipeline.answer_later import AnswerLater
from bridge.pipeline.answering import Answer, answer_turn
from bridge.pipeline.context import ContextAsk, ContextSources
from bridge.pipeline.deadlines import MissedDeadlines, within_deadline
from bridge.pipeline.image_descriptions import describe_images
from bridge.pipeline.keyed_locks import KeyedLocks
from bridge.pipeline.prompt import GatheredContext, build_request
from bridge.pipeline.reply_sink import ReplySink, ReplyStopped
from bridge.pipeline.shared_files import kept_files, with_files_named
from bridge.pipeline.storage_full import ToldOnce, say_cannot_keep
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.turn import Turn
from bridge.pipeline.turn_episode import episode_of
from bridge.pipeline.web_access import NO_WEB, WebAccess, with_sources
from layers.episodic.episode import Episode
from layers.episodic.memory import EpisodicMemory
from layers.episodic.recall_uses import RecallUse
from layers.identity.ingest_queue import IngestQueue
from layers.identity.protocol import TurnMessages
from layers.procedural.persona import PersonaLoader
from layers.procedural.skills import SkillLibrary
from layers.shared.errors import StorageFull
from layers.shared.offloaded import Offloaded
from layers.working.budget import trim_to_budget
from layers.working.sessions import Session, SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn

log = logging.getLogger(__name__)

# Local reads answer in milliseconds; these bounds only stop a stuck disk from holding
# the reply hostage. (Each context source has its own: ``context/``.)
PERSONA_DEADLINE_S = 1.0
TRANSCRIPT_DEADLINE_S = 1.0


@dataclass(frozen=True)
class PipelineConfig:
    transcript_token_budget: int = 6000
    max_tokens: int = 2048
    effort: str | None = None
    # The web tools the operator turned on, and where (``web_access.py``).
    web: WebAccess = NO_WEB


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
        identity_ingest: IngestQueue | None = None,
        after_reply: AfterReply | None = None,
        context: ContextSources | None = None,
        tools: ToolBox | None = None,
        answer_later: AnswerLater | None = None,
    ) -> None:
        """``model`` comes with its cost cap and charge around it (``MeteredModel``);
        ``context`` are the sources whose blocks head the turn's message, and ``tools``
        the ones the model may call (``bridge/app.py`` builds both lists);
        ``answer_later`` queues a Slack message the overloaded model could not answer.
        The stores come ``Offloaded``: a turn runs on the loop and reaches them only
        through a worker thread."""
        self._sessions = sessions
        self._transcript = transcript
        self._persona = persona
        self._skills = skills
        self._episodic = episodic
        self._model = model
        self._config = config
        self._context = context or ContextSources()
        self._tools = tools or ToolBox()
        self._after = after_reply or AfterReply(transcript, sessions, episodic, identity_ingest)
        self._later = answer_later
        self._locks = KeyedLocks()
        self._misses = MissedDeadlines()
        # The deliveries told their turn could not be kept (said once: ``storage_full.py``).
        self._told_full = ToldOnce()

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
        if self._told_full.told(turn.event_id):
            # Come round again (its inbox row could not be marked done on the full disk):
            # its person was told it would not be answered, and it is not.
            log.info("a turn told it could not be kept came round again: not answered")
            return TurnOutcome(session.id if session else "", messages.DISK_FULL, False,
                               timings=timings)
        if session is None:
            try:
                session = await self._sessions.run(
                    lambda sessions: sessions.open(turn.session_key, turn.place))
            except StorageFull:
                return await self._cannot_keep(turn, sink, timings)
        async with self._locks.hold(session.id):
            await sink.thinking()
            opened = session
            first_turn = await self._transcript.run(
                lambda transcript: transcript.count(opened.id)) == 0
            # The turn's other tools (the team's servers, listed on first use) are found
            # while its context is gathered.
            finding_tools = asyncio.ensure_future(self._tools.for_turn(turn))
            try:
                context = await self._gather(turn, session.id, sink, first_turn=first_turn)
                tools = await finding_tools
            finally:
                finding_tools.cancel()
            timings.context_ready = time.monotonic()
            answer = Answer(model=self._model.name)
            request = build_request(
                turn,
                context,
                model=self._model.name,
                tools=tools.specs,
                max_tokens=self._config.max_tokens,
                effort=self._config.effort,
                session_id=session.id,
                capabilities=(None if self._model.memory_only
                              else CATALOGUE.capabilities(self._model.name)),
                web=(frozenset() if self._model.memory_only
                     else self._config.web.at(turn.place)),
            )
            try:
                await self._answer_or_queue(answer, request, turn, sink, tools, session.id)
            except asyncio.CancelledError:
                # The transport gave up on the turn (Ctrl-C, shutdown): what was already
                # spent still counts toward the cap, and the message is kept.
                answer.failed(messages.INTERRUPTED)
                await asyncio.shield(self._record(turn, session, answer))
                raise
            timings.model_seconds = answer.model_seconds
            timings.last_token = time.monotonic()
            if not answer.ok and answer.text == messages.DISK_FULL:
                # The model's spend could not be written (the disk filled since the
                # session opened): told, not answered, nothing to record.
                return await self._cannot_keep(turn, sink, timings, session.id)
            try:
                await sink.finish(answer.notice or answer.text, ok=answer.ok,
                                  sources=answer.sources if answer.ok else ())
            except ReplyStopped:
                # Stop pressed while the reply was being closed: not a complete answer.
                answer.stopped = True
                answer.failed(f"{answer.text}\n\n{messages.STOPPED}".strip())
            except StorageFull:
                # The reply was shown; the transport's record of it found no room (the
                # disk filled during the turn). The turn's own writes say what they lose.
                log.warning("the reply in session %s was shown, not recorded: disk full",
                            session.id)
            timings.shown = time.monotonic()
            episode_id = None
            # Asked only after a tool that changes memory: not a read on every turn.
            if answer.put_off:
                pass  # recorded when it is answered (``answer_later.py``)
            elif answer.changed_memory and await self._sessions.run(
                    lambda sessions: sessions.get(opened.id)) is None:
                # "Forget me" ran in this very turn and took its session with the rest of
                # their DMs: nothing of the turn is kept either (bridge/forget_person.py).
                log.info("session %s was forgotten during its turn: nothing kept", opened.id)
            else:
                episode_id = await self._record(turn, session, answer)
                self._after.saw(session.id, [(block.name, block.text)
                                             for block in context.blocks], turn.received_at)
                recalled = [episode for block in context.blocks
                            for episode in block.recalled]
                if recalled:
                    self._after.recalled(recalled, RecallUse(session.id, turn.place, turn.user,
                                                             turn.received_at))
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

    async def _answer_or_queue(self, answer: Answer, request: ModelRequest, turn: Turn,
                               sink: ReplySink, tools: ToolBox, session_id: str) -> None:
        """The model's answer; or, the model overloaded (or a turn of the conversation
        queued already), the turn queued to be answered later (``answer_later.py``)."""
        later = self._later
        if later is not None and await later.behind_another(turn) and await later.defer(turn):
            answer.queued(messages.MODEL_OVERLOADED_LATER)  # answered after it, in order
            return
        await answer_turn(answer, self._model, request, turn, sink, tools, session_id)
        if not answer.deferrable:
            return
        if later is not None and await later.defer(turn):
            answer.queued(messages.MODEL_OVERLOADED_LATER)
        else:
            log.warning("the model is overloaded; the turn in session %s is told so, not"
                        " queued", session_id)

    async def _cannot_keep(self, turn: Turn, sink: ReplySink, timings: TurnTimings,
                           session_id: str = "") -> TurnOutcome:
        """Tell the person their turn cannot be kept (once per delivery); not answered.
        (The full disk itself is said once, by the database's health.)"""
        log.warning("a turn in %s is not answered: the database's disk is full",
                    turn.place.channel)
        if self._told_full.first_time(turn.event_id):
            await say_cannot_keep(sink, turn.place.channel)
        return TurnOutcome(session_id, messages.DISK_FULL, False, timings=timings)

    async def drain(self, timeout_s: float = 10.0) -> int:
        """Let background writes finish (at shutdown); returns how many did not."""
        return await self._after.drain(timeout_s)

    async def _gather(
        self, turn: Turn, session_id: str, sink: ReplySink, *, first_turn: bool
    ) -> GatheredContext:
        # A task, so that sources may read it while they run (the dropped-turns note does).
        transcript = asyncio.ensure_future(within_deadline(
            "transcript",
            TRANSCRIPT_DEADLINE_S,
            self._transcript.run(lambda transcript: trim_to_budget(
                transcript.turns(session_id), self._config.transcript_token_budget)),
            self._misses,
        ))
        ask = ContextAsk(turn, session_id, first_turn, transcript)
        procedural, trimmed, blocks = await asyncio.gather(
            within_deadline(
                "persona and skills",
                PERSONA_DEADLINE_S,
                self._procedural(),
                self._misses,
            ),
            transcript,
            self._context.gather(ask, sink, self._misses),
        )
        persona, skill_index = procedural or (None, None)
        return GatheredContext(
            persona=persona, skill_index=skill_index, transcript=trimmed, blocks=blocks)

    async def _procedural(self) -> tuple[str, str | None]:
        """The persona stack and the skill index (L4), both cached until files change."""
        index = (None if self._skills is None
                 else await self._skills.run(lambda skills: skills.index_text()))
        return await self._persona.run(lambda persona: persona.load().render()), index

    async def _record(self, turn: Turn, session: Session, answer: Answer) -> str | None:
        await self._after.record_turn(
            session.id,
            TranscriptTurn(
                # Later turns read that files were shared (their content is recalled), and
                # which pages a reply rested on (web fetch reads only addresses the
                # conversation holds).
                user_text=with_files_named(turn.text, turn.files),
                reply_text=with_sources(answer.text, answer.sources) if answer.ok
                else answer.text,
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
        images = [file for file in turn.files if isinstance(file, Read) and file.kind == "image"]
        if not images or self._model.memory_only:
            self._after.remember(episode)
            return episode.id
        model, person = self._model, turn.user

        async def described(episode: Episode) -> Episode:
            descriptions = await describe_images(
                model, images, CATALOGUE.capabilities(model.name), session_id=session.id,
                person=person)
            return replace(episode, files=kept_files(turn.files, descriptions))

        self._after.remember(episode, described)
        return episode.id
