"""The composition root: ``build(settings)`` creates each client once and passes it down."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from bridge.access.tokens import McpTokens
from bridge.all_tables import ALL_SCHEMAS
from bridge.commands import CommandServices
from bridge.connections.oauth_client import Connector, RemoteServer, connect_callback
from bridge.connections.store import ConnectionStore
from bridge.files.reader import FileReader
from bridge.files.reading import MB, Limits
from bridge.forget_person import ForgetStores, PersonForgetting
from bridge.housekeeping import Housekeeping
from bridge.model.cost_ledger import CostLedger
from bridge.model.metered import MeteredModel
from bridge.model.offline import OfflineResponder, SkillFinder
from bridge.model.output_budget import REPLY_TOKENS, sized_max_tokens
from bridge.model.overload import ModelCircuit
from bridge.model.protocol import LanguageModel
from bridge.model.retrying import RetryingModel
from bridge.pipeline.answer_later import AnswerLater
from bridge.pipeline.answer_later_job import AnswerLaterJob
from bridge.pipeline.answer_later_store import AnswerLaterStore
from bridge.pipeline.context import ContextSources
from bridge.pipeline.context.dropped_turns import DroppedTurns
from bridge.pipeline.context.memory_notes import KeptNotes
from bridge.pipeline.context.related_episodes import RelatedEpisodes
from bridge.pipeline.context.slack_context import SlackContext
from bridge.pipeline.context.user_model import UserModel
from bridge.pipeline.pipeline import PipelineConfig, TurnPipeline
from bridge.pipeline.tools import Caller, Tool, ToolBox
from bridge.pipeline.tools.offered import ToolDependencies, tools_for
from bridge.pipeline.web_access import WebAccess
from bridge.reflection_launcher import run_reflection
from bridge.routines.making import RoutineMaker
from bridge.routines.managing import RoutineManager
from bridge.routines.proposing import RoutineTools
from bridge.routines.running import RoutineRunner
from bridge.routines.store import RoutineStore
from bridge.session_end import SessionEnd
from bridge.settings import Settings
from bridge.slack_api.routine_places import may_post_in, place_named
from bridge.slack_api.slack_web import SlackWeb
from bridge.team_tools.asks import Asks
from bridge.team_tools.config import TeamToolsConfig, load_config
from bridge.team_tools.grants import Grants
from bridge.team_tools.team_tools import TeamTools, TeamToolStores
from layers.episodic.memory import EpisodicMemory
from layers.episodic.ranking import Priors
from layers.episodic.recall_levers import RecallLevers
from layers.identity.conversations import Conversations
from layers.identity.honcho import HonchoIdentity
from layers.identity.honcho_server import key_workspace
from layers.identity.ingest_queue import IngestQueue
from layers.identity.local.backend import LocalIdentity
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import IdentityBackend
from layers.identity.scope import ReadableSessions
from layers.identity.tombstones import Tombstones
from layers.identity.user_models import UserModels
from layers.notes.governance import NoteGovernance
from layers.notes.store import NoteStore
from layers.procedural.brain import Brain, BrainError
from layers.procedural.brain_peers import BrainFollower, BrainPeers
from layers.procedural.drafts import SkillDrafts
from layers.procedural.memory_notes import MemoryNotes
from layers.procedural.persona import PersonaLoader
from layers.procedural.shipped import SHIPPED_PERSONA, SHIPPED_SKILLS
from layers.procedural.skill_matcher import SkillMatcher
from layers.procedural.skills import SkillLibrary
from layers.shared.audit.log import AuditLog
from layers.shared.dependency_health import DependencyHealth
from layers.shared.embedding.embedder import Embedder, MiniLMEmbedder
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.engines import connect_postgres, open_sqlite
from layers.shared.storage.leases import Leases, process_name
from layers.shared.token_cipher import TokenCipher
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore
from reflection.followups import Followups
from reflection.state import ReflectionState

log = logging.getLogger(__name__)

# At shutdown the identity queue gets this long to send what it holds.
INGEST_DRAIN_S = 10.0
# Ending a session waits this long for its last episodes (local writes, quick).
SESSION_END_DRAIN_S = 30.0
DEFAULT_HONCHO_URL = "https://api.honcho.dev"
# One Honcho request (ingest, conclusions); the user model is bounded by USER_MODEL_TIMEOUT_S.
HONCHO_TIMEOUT_S = 10.0


@dataclass
class Thoth:
    """Everything a transport or command needs, built once."""

    settings: Settings
    db: Database
    embedder: Embedder
    episodic: EpisodicMemory
    sessions: SessionStore
    transcript: TranscriptStore
    persona: PersonaLoader
    brain: Brain
    skills: SkillLibrary
    drafts: SkillDrafts
    memory_notes: MemoryNotes
    notes: NoteGovernance
    tombstones: Tombstones
    pipeline: TurnPipeline
    # Every model call's cost, for the daily cap and the closing summary.
    ledger: CostLedger
    # Who changed what Thoth keeps, when and from where (the console, Slack, the CLI).
    audit: AuditLog
    # People's tokens for MCP over HTTP (`/thoth token`, the console, `thoth tokens`).
    mcp_tokens: McpTokens
    # "Forget me", the one way every surface does it.
    forgetting: PersonForgetting
    # Reflection state; a run older than REFLECTION_TIMEOUT_S counts as dead.
    reflections: ReflectionState
    # Checks back that reflection scheduled, posted in their threads when due.
    followups: Followups
    # How `/done` and the idle sweep end a session.
    session_end: SessionEnd
    # The periodic jobs of `thoth chat` and `thoth serve`.
    housekeeping: Housekeeping
    # What the typed commands use (`/recall`, `/done`, `/thoth token`: bridge/commands/).
    commands: CommandServices
    # Slack's Web API, for every surface that speaks to Slack (bridge/slack_api/).
    slack: SlackWeb
    # Jobs one process at a time runs, among all sharing the database; names this process.
    leases: Leases
    # The identity layer (L2): None when HONCHO_DISABLED.
    identity: IdentityBackend | None = None
    identity_ingest: IngestQueue | None = None
    user_models: UserModels | None = None
    # Why the brain could not be created or used, if it could not (`thoth doctor` says it).
    brain_problem: str | None = None
    # The processes sharing BRAIN_REMOTE (None without one).
    brain_peers: BrainPeers | None = None
    # Reads shared files within FILE_MAX_MB, for every surface that takes files.
    file_reader: FileReader = field(default_factory=lambda: FileReader(Limits()))
    # The team's MCP servers (mcp.json), and why the file could not be used, if not.
    team_tools: TeamTools | None = None
    team_tools_problem: str | None = None
    # Routines: made (checked, audited) and kept; run where a transport can post them.
    routines: RoutineMaker | None = None
    # Which services this process stands on are failing now (/health, `thoth doctor`).
    health: DependencyHealth = field(default_factory=DependencyHealth)

    def brain_follower(self) -> BrainFollower | None:
        """What pulls the brain when another process pushed (serve and worker run it)."""
        return None if self.brain_peers is None else BrainFollower(self.brain, self.brain_peers)

    def routine_runner(self, owner: str | None = None) -> RoutineRunner | None:
        """What runs the routines that are due and posts them (serve and worker run it);
        None when Slack is not configured or routines are off."""
        from bridge.slack_api.routine_posts import routine_runner

        return routine_runner(self.pipeline, self.slack, self.routines, self.audit,
                              grace_min=self.settings.routine_grace_min, owner=owner)

    def close(self) -> None:
        self.file_reader.close()
        self.db.close()

    def warm_up(self) -> None:
        """Load the embedding model and the vector index before the first turn.

        Cold, they take seconds: the first turn's related episodes would miss their
        deadline. A failure is logged; the turn will simply go on without them.
        """
        if self.settings.episodic_disabled:
            return
        try:
            self.episodic.recall("warm up", Viewer(), k=1)
        except Exception:
            log.exception("warming up episodic memory failed; turns go on without it")

    async def drain(self, timeout_s: float = INGEST_DRAIN_S) -> int:
        """Let background writes (episodes, identity ingest) finish; returns what did not."""
        unfinished = await self.pipeline.drain(timeout_s)
        if self.identity_ingest is not None:
            unfinished += await self.identity_ingest.drain(timeout_s)
        return unfinished

    async def aclose(self) -> None:
        """Finish background writes, close the model's client and the team's servers,
        then the database."""
        await self.drain()
        await self.pipeline.model.aclose()
        if self.team_tools is not None:
            await self.team_tools.aclose()
        self.close()


def build(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    model: LanguageModel | None = None,
) -> Thoth:
    """Open the database (running migrations) and wire the layers together.

    The embedding model loads lazily, on the first text to embed, so commands
    that never embed (``init``, ``export``) start fast.
    """
    health = DependencyHealth()
    db = open_database(settings, health)
    chosen_embedder = embedder or MiniLMEmbedder()
    episodic = build_episodic(settings, db, chosen_embedder)
    sessions = SessionStore(db)
    transcript = TranscriptStore(db)
    brain_peers = BrainPeers(db, settings.brain_remote) if settings.brain_remote else None
    brain = Brain(settings.brain_path, remote=settings.brain_remote, peers=brain_peers,
                  health=health, remote_timeout_s=settings.brain_remote_timeout_s)
    brain_problem = ensure_brain(brain)
    # The brain's files when it exists; the shipped ones keep the agent whole if it does not.
    persona = PersonaLoader((brain.persona_dir, SHIPPED_PERSONA))
    skills = SkillLibrary((brain.skills_dir, SHIPPED_SKILLS))
    matcher = SkillMatcher(skills, chosen_embedder)
    tombstones = Tombstones(db, settle_s=forget_settle_s(settings))
    # What runs on a loop reaches a store only offloaded to a thread (layers/shared/offloaded.py).
    off_tombstones = Offloaded(tombstones)
    identity = (
        None if settings.honcho_disabled
        else build_identity(settings, db, chosen_embedder, tombstones, health)
    )
    ingest = (
        IngestQueue(
            identity,
            outbox=Offloaded(IngestOutbox(db)),
            send_here=settings.background_work == "inline",
            tombstones=off_tombstones,
        )
        if identity is not None
        else None
    )
    user_models = UserModels(identity) if identity is not None else None
    ledger = CostLedger(db)
    # The model's API overloaded: shared by every call of this process (model/overload.py).
    circuit = ModelCircuit(probe_every_s=settings.model_probe_every_s, health=health)
    chosen_model = metered(settings, model or build_model(
        settings, find_skills=lambda text: [(s.slug, s.description) for s in matcher.match(text)],
        health=health, circuit=circuit,
    ), ledger)
    leases = Leases(db, owner=process_name())
    memory_record = MemoryNotes(brain)
    notes = NoteGovernance(
        NoteStore(db), memory_record, founders=settings.founder_user_ids,
        auto=settings.memory_notes == "auto",
    )
    audit = AuditLog(db)
    forgetting = PersonForgetting(
        Offloaded(ForgetStores(db, episodic, sessions, notes, tombstones, audit)), identity,
        user_models)
    off_episodic = None if settings.episodic_disabled else Offloaded(episodic)
    off_skills = Offloaded(skills)
    off_sessions = Offloaded(sessions)
    file_reader = FileReader(file_limits(settings))
    team_tools, team_tools_problem = the_team_tools(settings, db, file_reader, off_skills)
    routines = RoutineMaker(
        Offloaded(RoutineStore(db)), Offloaded(audit),
        may_post_in(lambda: slack_web.memberships, lambda: slack_web.client),
        min_interval_min=settings.routine_min_interval_min,
        max_per_person=settings.routine_max_per_person)
    routine_place = place_named(lambda: slack_web.client, lambda: slack_web.workspace_of)
    pipeline = TurnPipeline(
        sessions=off_sessions,
        transcript=Offloaded(transcript),
        persona=Offloaded(persona),
        skills=off_skills,
        episodic=off_episodic,
        model=chosen_model,
        config=PipelineConfig(
            transcript_token_budget=settings.transcript_token_budget,
            max_tokens=sized_max_tokens(
                settings.model_max_tokens, settings.thoth_model, settings.thoth_effort,
                REPLY_TOKENS,
            ),
            effort=settings.thoth_effort,
            web=WebAccess(frozenset(settings.web_tools), None if settings.web_tools_places is None
                          else tuple(settings.web_tools_places)),
        ),
        identity_ingest=ingest,
        context=context_sources(settings, Offloaded(notes.store), user_models, off_episodic),
        tools=ToolBox(model_tools(
            settings, Offloaded(episodic), off_skills, identity, forgetting),
            # The model proposes routines where the transport shows a card for them.
            more=RoutineTools(routines, routine_place, team_tools)),
        answer_later=AnswerLater(Offloaded(AnswerLaterStore(db, owner=leases.owner))),
    )
    drafts = SkillDrafts(db, brain, skills)
    reflections = ReflectionState(db, run_timeout_s=settings.reflection_timeout_s)
    session_end = build_session_end(settings, off_sessions, reflections, pipeline)
    mcp_tokens = McpTokens(db, audit)
    slack_web = SlackWeb(settings, db, health=health)
    return Thoth(
        health=health,
        settings=settings,
        db=db,
        embedder=chosen_embedder,
        episodic=episodic,
        sessions=sessions,
        transcript=transcript,
        persona=persona,
        brain=brain,
        skills=skills,
        drafts=drafts,
        memory_notes=memory_record,
        notes=notes,
        tombstones=tombstones,
        pipeline=pipeline,
        identity=identity,
        identity_ingest=ingest,
        user_models=user_models,
        ledger=ledger,
        audit=audit,
        mcp_tokens=mcp_tokens,
        forgetting=forgetting,
        commands=CommandServices(
            sessions=off_sessions, transcript=Offloaded(transcript), session_end=session_end,
            tokens=Offloaded(mcp_tokens), recall_top_k=settings.recall_top_k,
            # /recall searches what is stored even while EPISODIC_DISABLED keeps turns
            # from reading and writing episodes, as `thoth recall` does.
            episodic=Offloaded(episodic), drain=lambda: pipeline.drain(SESSION_END_DRAIN_S),
            connector=None if team_tools is None else team_tools.connector,
            routines=routines, routine_manager=RoutineManager(routines.store, Offloaded(audit)),
            routine_place=routine_place,
        ),
        slack=slack_web,
        reflections=reflections,
        followups=Followups(db),
        session_end=session_end,
        housekeeping=Housekeeping(
            drafts=drafts,
            episodic=episodic,
            session_end=session_end,
            reflection_idle_s=(
                None if settings.reflection_disabled else settings.reflection_idle_min * 60
            ),
            retention_days=settings.episode_retention_days,
            leases=leases,
            tombstones=off_tombstones,
            identity=identity,
            identity_ingest=ingest,
            answer_later=lambda: answer_later_job(
                settings, pipeline, db, slack_web, leases.owner, circuit),
            answer_later_every_s=settings.answer_later_every_s,
        ),
        leases=leases,
        brain_problem=brain_problem,
        brain_peers=brain_peers,
        file_reader=file_reader,
        team_tools=team_tools,
        team_tools_problem=team_tools_problem,
        routines=routines,
    )


def file_limits(settings: Settings) -> Limits:
    """What a shared file may be: FILE_MAX_MB; the rest are the model's limits."""
    return Limits(max_bytes=settings.file_max_mb * MB)


def open_database(settings: Settings, health: DependencyHealth | None = None) -> Database:
    """PostgreSQL with ``DATABASE_URL``, else the SQLite file in THOTH_HOME; migrated.
    ``health`` is told when the database fails and recovers."""
    if settings.database_url is not None:
        return connect_postgres(settings.database_url.get_secret_value(), schemas=ALL_SCHEMAS,
                                health=health)
    return open_sqlite(settings.db_path, schemas=ALL_SCHEMAS, health=health)


def build_episodic(settings: Settings, db: Database, embedder: Embedder) -> EpisodicMemory:
    return EpisodicMemory(db, embedder, Priors(tau_days=settings.recall_tau_days),
                          min_similarity=settings.recall_min_similarity,
                          levers=RecallLevers.named(settings.recall_levers),
                          # PostgreSQL searches with pgvector's own HNSW.
                          graph_path=None if settings.database_url is not None
                          else settings.db_path.with_name(settings.db_path.name + ".hnsw"))


def metered(settings: Settings, model: LanguageModel, ledger: CostLedger) -> LanguageModel:
    """Every call a turn or a reflection makes, capped and charged here, once (the offline
    responder costs nothing)."""
    if isinstance(model, OfflineResponder):
        return model
    return MeteredModel(
        model, Offloaded(ledger), settings.model_prices,
        daily_cap_usd=settings.daily_cost_cap_usd,
        person_cap_usd=settings.daily_cost_cap_per_person_usd,
    )


def context_sources(
    settings: Settings,
    notes: Offloaded[NoteStore],
    user_models: UserModels | None,
    episodic: Offloaded[EpisodicMemory] | None,
) -> ContextSources:
    """The blocks that head a turn's message, in DESIGN.md's order ("One turn"), from the
    parts that are on. A new source is its module in ``bridge/pipeline/context/`` and a
    line here."""
    return ContextSources([
        SlackContext(),
        KeptNotes(notes),
        UserModel(user_models, deadline_s=settings.user_model_timeout_s)
        if user_models is not None else None,
        RelatedEpisodes(episodic, k=settings.recall_top_k) if episodic is not None else None,
        DroppedTurns(),
    ])


def build_session_end(
    settings: Settings, sessions: Offloaded[SessionStore], reflections: ReflectionState,
    pipeline: TurnPipeline,
) -> SessionEnd:
    """How `/done` and the idle sweep end a session: reflected here, or queued for
    `thoth worker` processes."""
    return SessionEnd(
        sessions,
        None if settings.reflection_disabled else Offloaded(reflections),
        drain=lambda: pipeline.drain(SESSION_END_DRAIN_S),
        reflect=(
            None
            if settings.background_work == "workers"
            else lambda session_id, summary: run_reflection(settings, session_id, summary=summary)
        ),
    )


def model_tools(
    settings: Settings,
    episodic: Offloaded[EpisodicMemory],
    skills: Offloaded[SkillLibrary],
    identity: IdentityBackend | None,
    forgetting: PersonForgetting,
) -> list[Tool[Caller]]:
    """Every tool the model may call, from the parts that are on: the turn's share of the
    one list of tools (``bridge/pipeline/tools/offered.py``), where a new tool is a line."""
    return tools_for("turn", ToolDependencies(
        skills, settings.recall_top_k,
        episodic=None if settings.episodic_disabled else episodic,
        identity=identity,
        forgetting=forgetting,
    ))


def the_team_tools(settings: Settings, db: Database, reader: FileReader,
                   skills: Offloaded[SkillLibrary]) -> tuple[TeamTools | None, str | None]:
    """The team's MCP servers from ``mcp.json`` (None without the file), or why the file
    cannot be used: Thoth runs without them, and ``thoth doctor`` says so."""
    try:
        config = load_config(settings.mcp_config_path)
    except BadInput as error:
        log.error("the team's MCP servers are not used: %s", error)
        return None, str(error)
    if not config.servers and not config.refused:
        return None, None
    for name, why in config.refused.items():
        log.error("MCP server %s is not used: %s", name, why)
    config, connector = connections_of(settings, db, config)
    stores = TeamToolStores(Grants(db), Asks(db), AuditLog(db))
    return TeamTools(config, Offloaded(stores), reader, timeout_s=settings.mcp_tool_timeout_s,
                     logs=settings.thoth_home / "logs", skills=skills,
                     connector=connector), None


def connections_of(settings: Settings, db: Database, config: TeamToolsConfig,
                   ) -> tuple[TeamToolsConfig, Connector | None]:
    """People's own sign-ins to the servers that take them; without what they need
    (the console's address to come back to, the keys that seal tokens), those servers
    are refused, each with the line saying what is missing."""
    signed_in = {name: entry for name, entry in config.servers.items() if entry.auth == "oauth"}
    if not signed_in:
        return config, None
    missing = [name for name, value in (("CONSOLE_URL", settings.console_url),
                                        ("SLACK_TOKEN_KEYS", settings.slack_token_keys))
               if not value]
    if missing:
        why = (f"people connect their own accounts through the console, which needs"
               f" {' and '.join(missing)} set")
        for name in signed_in:
            log.error("MCP server %s is not used: %s", name, why)
        return TeamToolsConfig(
            {name: entry for name, entry in config.servers.items() if name not in signed_in},
            {**config.refused, **dict.fromkeys(signed_in, why)}), None
    assert settings.console_url is not None and settings.slack_token_keys is not None
    cipher = TokenCipher.from_setting(settings.slack_token_keys.get_secret_value())
    servers = {name: RemoteServer(name, entry.url or "", *(
        (entry.oauth.client_id, entry.oauth.client_secret, entry.oauth.scope)
        if entry.oauth is not None else ())) for name, entry in signed_in.items()}
    return config, Connector(servers, Offloaded(ConnectionStore(db, cipher)),
                             connect_callback(settings.console_url),
                             audit=Offloaded(AuditLog(db)))


def uses_honcho(settings: Settings) -> bool:
    """Honcho when ``HONCHO_API_KEY`` or ``HONCHO_URL`` is set, the local backend otherwise."""
    return not settings.honcho_disabled and (
        settings.honcho_api_key is not None or bool(settings.honcho_url)
    )


def forget_settle_s(settings: Settings) -> float:
    """How long after a forget the identity backend may still derive facts from before it."""
    return settings.honcho_forget_settle_min * 60 if uses_honcho(settings) else 0.0


def build_identity(
    settings: Settings, db: Database, embedder: Embedder, tombstones: Tombstones,
    health: DependencyHealth | None = None,
) -> IdentityBackend:
    if not uses_honcho(settings):
        return LocalIdentity(db, embedder)
    api_key = settings.honcho_api_key.get_secret_value() if settings.honcho_api_key else None
    base_url = settings.honcho_url or DEFAULT_HONCHO_URL
    limited_to = key_workspace(api_key) if api_key else None
    if limited_to is not None and settings.honcho_workspace_id != limited_to:
        raise ConfigurationError(
            f"HONCHO_API_KEY is limited to the Honcho workspace {limited_to!r}: set"
            f" HONCHO_WORKSPACE_ID={limited_to} (one workspace for every Slack workspace),"
            " or use an admin key for one workspace per Slack workspace"
        )

    def client_for(workspace: str) -> object:
        from honcho import Honcho

        # Every option explicit (the SDK would read HONCHO_* itself); retries are the
        # ingest queue's, and the user model has the pipeline's hard deadline.
        return Honcho(
            api_key=api_key,
            base_url=base_url,
            workspace_id=workspace,
            timeout=HONCHO_TIMEOUT_S,
            max_retries=0,
        )

    return HonchoIdentity(
        client_for,
        workspace_id=settings.honcho_workspace_id,
        readable_sessions=ReadableSessions(db),
        server_url=base_url,
        conversations_of=Conversations(db).of,
        dialectic=settings.honcho_user_model == "dialectic",
        api_key=api_key,
        unswept=tombstones.unswept,
        settle_s=forget_settle_s(settings),
        # Honcho away: turns skip the user model, the outbox waits for a probe (one line).
        health=health,
    )


def ensure_brain(brain: Brain) -> str | None:
    """Create the brain on first run; a problem is returned, not raised or logged.

    Each command that needs the brain says the problem in its one error line (`init`,
    `skills`, and `chat` and `serve`, which refuse to start: ``bridge/cli/preflight.py``);
    the others do not touch it and run as usual.
    """
    try:
        brain.create(SHIPPED_PERSONA, SHIPPED_SKILLS)
    except BrainError as error:
        return str(error)
    except OSError as error:  # a folder on the way that cannot be read or written
        return f"the brain at {brain.path} cannot be created ({error.strerror or error})"
    return None


def answer_later_job(settings: Settings, pipeline: TurnPipeline, db: Database,
                     slack: SlackWeb, owner: str, circuit: ModelCircuit) -> AnswerLaterJob | None:
    """What answers the Slack messages queued while the model was overloaded (serve runs
    it); None without Slack."""
    client = slack.client
    if client is None:
        return None
    from bridge.slack_api.answer_later_posts import slack_answer_later_job

    return slack_answer_later_job(
        pipeline, db, client, owner=owner, workspace_of=slack.workspace_of,
        ready=circuit.readiness, probe_every_s=settings.model_probe_every_s)


def build_model(settings: Settings, *, find_skills: SkillFinder | None = None,
                health: DependencyHealth | None = None,
                circuit: ModelCircuit | None = None) -> LanguageModel:
    """Claude when ``ANTHROPIC_API_KEY`` is set, the offline responder otherwise;
    ``health`` is told when the model's API is overloaded and when it is back."""
    if settings.anthropic_api_key is None:
        return OfflineResponder(find_skills)
    # Imported here: the SDK takes seconds to import, and most commands never call it.
    import anthropic

    from bridge.model.anthropic_model import AnthropicModel, client_options

    # Retries are RetryingModel's, which knows whether text has reached the user.
    client = anthropic.AsyncAnthropic(
        **client_options(
            settings.anthropic_api_key,
            settings.anthropic_base_url,
            timeout_s=settings.model_timeout_s,
            max_retries=0,
        )
    )
    return RetryingModel(
        AnthropicModel(client, settings.thoth_model),
        attempts=settings.model_max_attempts,
        # Retries (and the server's retry-after) within this, then the turn is queued.
        budget_s=settings.model_retry_budget_s,
        circuit=circuit or ModelCircuit(probe_every_s=settings.model_probe_every_s,
                                        health=health),
    )
