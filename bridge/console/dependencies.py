"""What the console reads and changes, built once (``console_dependencies``) and reached only
offloaded: its pages are coroutines on the server's loop."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bridge.access.tokens import McpTokens
from bridge.app import Thoth
from bridge.connections.oauth_client import Connector
from bridge.console.names import Names
from bridge.console.pages.health import HealthChecks
from bridge.console_links import ConsoleLinks, console_links
from bridge.forget_person import PersonForgetting
from bridge.health_checks import run_checks
from bridge.model.cost_ledger import CostLedger
from bridge.model.spend_report import SpendReader
from bridge.routines.managing import RoutineManager
from bridge.routines.store import RoutineStore
from bridge.slack_api.memberships import SlackMemberships
from bridge.slack_api.note_cards import NoteCardStore
from bridge.slack_api.skill_cards import CardStore
from bridge.slack_api.workspace_client import WorkspaceOf
from bridge.team_tools.asks import Asks
from bridge.team_tools.grants import Grants
from layers.episodic.memory import EpisodicMemory
from layers.identity.protocol import IdentityBackend
from layers.identity.tombstones import Tombstones
from layers.notes.governance import NoteGovernance
from layers.procedural.brain import Brain
from layers.procedural.drafts import SkillDrafts
from layers.procedural.persona import PersonaLoader
from layers.procedural.skills import SkillLibrary
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore
from reflection.state import ReflectionState


@dataclass(frozen=True)
class ConsoleStores:
    episodic: EpisodicMemory
    transcript: TranscriptStore
    notes: NoteGovernance
    skills: SkillLibrary
    drafts: SkillDrafts
    brain: Brain
    ledger: CostLedger
    spend: SpendReader
    audit: AuditLog
    # Who asked to be forgotten: nothing they said before it is learned again.
    tombstones: Tombstones
    # Which Slack messages are which note's and which draft's cards.
    note_cards: NoteCardStore
    cards: CardStore
    # Each finished session's report.
    reflections: ReflectionState
    sessions: SessionStore
    # People's tokens for MCP over HTTP.
    mcp_tokens: McpTokens
    # The persona's files, as every prompt reads them.
    persona: PersonaLoader
    # Who always allows which of the team's tools ("Always allow" on a card, `a` in chat).
    grants: Grants
    # What waits on a person (a conversation waiting for them to connect an account).
    asks: Asks
    # Routines and their runs (issue 53).
    routines: RoutineStore


@dataclass(frozen=True)
class ConsoleDependencies:
    stores: Offloaded[ConsoleStores]
    daily_cap_usd: float
    # The identity layer (async; None when HONCHO_DISABLED).
    identity: IdentityBackend | None
    # "Forget me", as every surface does it (bridge/forget_person.py).
    forgetting: PersonForgetting
    # Slack, to show a decision made here on its cards (None without SLACK_BOT_TOKEN).
    slack: AsyncWebClient | None = None
    # Which private channels a member is in (asked of Slack; none without it).
    memberships: SlackMemberships = field(default_factory=lambda: SlackMemberships(None))
    # Where browsers reach the console (CONSOLE_URL), for links on Slack cards.
    links: ConsoleLinks | None = None
    # What `thoth doctor` checks (None: the Health page has nothing to run).
    health: HealthChecks | None = None
    # How many episodes a search shows.
    results: int = 20
    # Installed into many workspaces: the install Slack is asked through for each team.
    workspace_of: WorkspaceOf | None = None
    # Names for the ids of channels and people (Slack's directory, cached).
    names: Names = field(default_factory=lambda: Names(None))
    # People's own sign-ins to the team's remote servers (None: no server takes them).
    connector: Connector | None = None
    # Pausing, resuming, running now and deleting routines (checked and audited).
    routines: RoutineManager | None = None


def console_dependencies(thoth: Thoth) -> ConsoleDependencies:
    stores = ConsoleStores(thoth.episodic, thoth.transcript, thoth.notes, thoth.skills,
                           thoth.drafts, thoth.brain, thoth.ledger, SpendReader(thoth.db),
                           thoth.audit, thoth.tombstones, NoteCardStore(thoth.db),
                           CardStore(thoth.db), thoth.reflections, thoth.sessions,
                           thoth.mcp_tokens, thoth.persona, Grants(thoth.db),
                           Asks(thoth.db), RoutineStore(thoth.db))
    settings, slack = thoth.settings, thoth.slack
    return ConsoleDependencies(Offloaded(stores), settings.daily_cost_cap_usd,
                        thoth.identity, thoth.forgetting, slack.client, slack.memberships,
                        console_links(settings.console_url),
                        HealthChecks(lambda: run_checks(thoth, in_server=True)),
                        workspace_of=slack.workspace_of,
                        names=Names(slack.client, slack.workspace_of),
                        connector=(None if thoth.team_tools is None
                                   else thoth.team_tools.connector),
                        routines=RoutineManager(Offloaded(RoutineStore(thoth.db)),
                                                Offloaded(thoth.audit)))
