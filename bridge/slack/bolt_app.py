"""The Bolt app: every listener acknowledges at once and hands its work to the runner.

Bolt's async app, with the async Slack client: listeners run on the loop that takes
Slack's requests (uvicorn's, or Socket Mode's), the work they hand on runs on the
turns' loop (``runner.py``), and neither loop has a Slack call that could block it.
What is left that blocks — the database — is reached only through the stores offloaded
to a thread (``stores.py``, ``layers/shared/offloaded.py``), which
``tests/unit/test_blocking_calls.py`` checks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.authorization.async_single_team_authorization import (
    AsyncSingleTeamAuthorization,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bridge import messages
from bridge.app import Thoth
from bridge.commands import Command
from bridge.commands.table import slash_commands
from bridge.console_links import console_links
from bridge.pipeline.storage_full import ToldOnce
from bridge.routines.managing import RoutineManager
from bridge.routines.store import CREATOR_DEACTIVATED
from bridge.slack.app_home import (
    FORGET_EVERYTHING,
    FORGET_FACT,
    KEEP_NOTE,
    REJECT_NOTE,
    AppHome,
)
from bridge.slack.assistant import AssistantThreads
from bridge.slack.commands import slash_command
from bridge.slack.connect_links import CONNECT_BUTTON, ConnectLinks
from bridge.slack.conversation import Conversation, ConversationDependencies
from bridge.slack.database_away import StillAway
from bridge.slack.delivery_order import DeliveryOrder
from bridge.slack.events import Incoming, from_event, mentions
from bridge.slack.feedback import FEEDBACK_ACTION
from bridge.slack.inbox import InboxEntry
from bridge.slack.listeners import Listener, Work, register
from bridge.slack.org_access import listen_to_org_access
from bridge.slack.reactions import Reactions
from bridge.slack.routine_cards import RoutineCards
from bridge.slack.runner import TurnRunner
from bridge.slack.shortcuts import FORGET_THIS, REMEMBER_THIS, Shortcuts
from bridge.slack.stores import SlackStores, slack_stores
from bridge.slack.tool_approvals import ToolAsking
from bridge.slack.workspace_guard import enterprise_of, only_its_workspace
from bridge.slack_api.directory import Directory
from bridge.slack_api.installs.authorize import (
    AuthorizedByInstall,
    serve_the_authorized_workspace,
)
from bridge.slack_api.installs.install_flow import install_flow
from bridge.slack_api.routine_cards import CANCEL as ROUTINE_CANCEL
from bridge.slack_api.routine_cards import CREATE as ROUTINE_CREATE
from bridge.slack_api.routine_cards import DELETE as ROUTINE_DELETE
from bridge.slack_api.routine_cards import PAUSE as ROUTINE_PAUSE
from bridge.slack_api.routine_cards import RESUME as ROUTINE_RESUME
from bridge.slack_api.routine_cards import RUN_NOW as ROUTINE_RUN_NOW
from bridge.slack_api.skill_cards import APPROVE_ACTION, REJECT_ACTION
from bridge.slack_api.tool_cards import ALLOW_ALWAYS, ALLOW_ONCE, DENY
from bridge.slack_api.workspace_client import WorkspaceOf, serving
from bridge.slack_api.workspace_client import bot_user as served_bot_user
from layers.shared.audit.log import AuditLog
from layers.shared.errors import ConfigurationError, StorageFull
from layers.shared.offloaded import Offloaded
from layers.shared.redaction import redact

log = logging.getLogger(__name__)


@dataclass
class SlackTransport:
    app: AsyncApp
    runner: TurnRunner
    conversation: Conversation
    reactions: Reactions
    assistant: AssistantThreads
    home: AppHome
    shortcuts: Shortcuts
    # Every store the transport uses: as is, for the scheduler's jobs (threads of their
    # own), and offloaded for the listeners and handlers on the loops.
    stores: SlackStores
    offloaded: Offloaded[SlackStores]
    # Deliveries taken and not yet done, shared by every replica, run in lane order.
    delivery_order: DeliveryOrder
    bot_user: str | None
    team: str | None = None
    # Installed into many workspaces: the install that answers for a team id.
    workspace_of: WorkspaceOf | None = None


async def build_bridge(thoth: Thoth, runner: TurnRunner) -> SlackTransport:
    """The bridge, on the app's Slack Web API (``thoth.slack``). With one bot token, asks
    Slack who it is (auth.test) first; installed into many workspaces, each request is
    authorized by its workspace's install instead, and "Add to Slack" is served
    (``bridge/slack_api/installs/``)."""
    settings = thoth.settings
    client, installations = thoth.slack.client, thoth.slack.installations
    if client is None:
        raise ConfigurationError("Slack is not configured: set SLACK_BOT_TOKEN, or"
                                 " SLACK_TOKEN_KEYS to be installed through Slack's OAuth flow")
    signing_secret = (settings.slack_signing_secret.get_secret_value()
                      if settings.slack_signing_secret else None)
    identity: dict[str, Any] = {}
    if installations is None:
        answer = await client.auth_test()
        identity = answer.data if isinstance(answer.data, dict) else {}
        with _unseen_by_bolt(*BOLT_OAUTH_VARIABLES):
            app = AsyncApp(
                # The client carries the bot token (and the base URL and retry handlers).
                signing_secret=signing_secret,
                client=client,
                # Bolt acks first and runs listeners after; ours only enqueue, so acks
                # stay fast.
                process_before_response=False,
                logger=logging.getLogger("slack_bolt"),
            )
        _authorized_as(app, answer)
        only_its_workspace(app, identity)
        workspace_of: WorkspaceOf | None = None
    else:
        app = AsyncApp(
            signing_secret=signing_secret,
            client=client,
            oauth_flow=install_flow(settings, installations, thoth.db,
                                    on_removed=_connections_ended(thoth)),
            # Bolt takes an AsyncAuthorize as it is (async_app.py), beside an OAuth flow;
            # its annotation names only plain functions.
            authorize=AuthorizedByInstall(installations),  # type: ignore[arg-type]
            process_before_response=False,
            logger=logging.getLogger("slack_bolt"),
        )
        serve_the_authorized_workspace(app)
        # tokens_revoked and app_uninstalled delete the install (and its token) at once.
        app.enable_token_revocation_listeners()
        listen_to_org_access(app, installations, on_removed=_connections_ended(thoth))
        workspace_of = thoth.slack.workspace_of
    bot_user = str(identity.get("user_id") or "") or None
    directory = Directory(client)
    stores = slack_stores(thoth)
    offloaded = Offloaded(stores)
    assistant = AssistantThreads(offloaded, client, directory)
    console = console_links(settings.console_url)
    offloaded_audit = Offloaded(thoth.audit)
    parts = ConversationDependencies(
        stores=offloaded,
        pipeline=thoth.pipeline,
        commands=thoth.commands,
        console=console,
        file_reader=thoth.file_reader,
        tool_asks=(None if thoth.team_tools is None else ToolAsking(
            client, thoth.team_tools, founders=frozenset(settings.founder_user_ids),
            connect_links=(ConnectLinks(client, thoth.team_tools, console)
                           if thoth.team_tools.connector is not None and console is not None
                           else None))),
        routine_cards=(None if thoth.routines is None else RoutineCards(
            client, thoth.routines, RoutineManager(thoth.routines.store, offloaded_audit),
            founders=frozenset(settings.founder_user_ids))),
    )
    conversation = Conversation(parts, client, directory, assistant, bot_user=bot_user)
    reactions = Reactions(
        offloaded, thoth.identity, client, directory,
        founders=frozenset(settings.founder_user_ids), bot_user=bot_user, console=console,
    )
    home = AppHome(offloaded, thoth.identity, client,
                   founders=frozenset(settings.founder_user_ids), console=console,
                   forgetting=thoth.forgetting)
    bridge = SlackTransport(
        app, runner, conversation, reactions, assistant, home, Shortcuts(reactions.kit),
        stores, offloaded,
        DeliveryOrder(offloaded, lease_s=settings.inbox_lease_s,
                      unavailable=thoth.db.unavailable_errors), bot_user,
        team=str(identity.get("team_id") or "") or None, workspace_of=workspace_of,
    )
    register(app, runner, [
        *_messages(bridge), *_reactions_and_clicks(bridge), *_the_ai_pane(bridge),
        *_the_home_tab_and_shortcuts(bridge), *_people_leaving(thoth),
        *(Listener("command", command.slash_name,
                   _slash_work(bridge, command, client), ack_text=command.ack)
          for command in slash_commands()),
    ])
    return bridge


# With both in the environment and no OAuth settings given, Bolt makes itself an OAuth
# app (async_app.py): a file installation store, "please install" for every request, and
# the bot token ignored. They are there wherever sign-in with Slack (the console, MCP) is
# set up through the environment, so Bolt's one-token app is built without seeing them.
BOLT_OAUTH_VARIABLES = ("SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET")


@contextmanager
def _unseen_by_bolt(*names: str) -> Iterator[None]:
    """Within, ``names`` are not in the environment (at start-up, before any thread reads
    it); after, they are back as they were."""
    hidden = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(hidden)


def _authorized_as(app: AsyncApp, identity: AsyncSlackResponse) -> None:
    """Bolt's async app asks auth.test on the first request it authorizes, and every
    request of a first burst asks at once (meeting Slack's rate tier: acks of a second
    and more). The bridge asked at start; Bolt is handed that answer."""
    for middleware in app._async_middleware_list:
        if isinstance(middleware, AsyncSingleTeamAuthorization):
            middleware.auth_test_result = identity


def _messages(bridge: SlackTransport) -> list[Listener]:
    bot_user, stores = bridge.bot_user, bridge.offloaded
    # A message with no room to be stored is told so once, however many of its deliveries
    # (the mention, its message event, their retries) come.
    told_full = ToldOnce()

    async def tell_full(incoming: Incoming) -> None:
        if told_full.first_time(f"msg:{incoming.channel}:{incoming.ts}"):
            await bridge.conversation.tell(incoming, messages.DISK_FULL)

    async def accept(body: dict[str, Any], *, addressed: bool) -> None:
        """On the runner: a delivery acked is never lost to the intake loop's shutdown
        (the runner's waits for what it holds), nor to the database being away (held
        until it is back: ``database_away.py``)."""
        event = body.get("event") or {}
        own = served_bot_user(bot_user)
        incoming = from_event(
            event, team=str(body.get("team_id") or ""), event_id=body.get("event_id"),
            bot_user=own, enterprise=enterprise_of(body),
        )
        if incoming is None:
            return
        said = incoming
        try:
            taken = await bridge.delivery_order.intake.take(
                lambda: take(said, event, addressed=addressed, own=own),
                f"a Slack message in {said.channel}")
        except StillAway:
            log.error("a Slack message in %s was not kept: the database stayed away",
                      said.channel)
            await bridge.conversation.tell(said, messages.NOT_KEPT_DATABASE_AWAY)
            return
        except StorageFull:
            # Not held: a full disk stays full until someone frees it. The person is told
            # to send it again.
            log.warning("a Slack message in %s was not kept: the disk is full", said.channel)
            await tell_full(said)
            return
        if taken is None:
            return
        placed, entry = taken
        conversation, runner = bridge.conversation, bridge.runner
        await bridge.delivery_order.run(
            entry, lambda: runner.as_turn(conversation.handle(placed), who=placed.user),
            again=lambda: runner.as_turn(conversation.take_over(placed), who=placed.user),
            unkept=lambda: tell_full(placed),
        )

    async def take(incoming: Incoming, event: dict[str, Any], *, addressed: bool,
                   own: str | None) -> tuple[Incoming, InboxEntry] | None:
        """The message placed and in the inbox; None if it is not Thoth's to answer or
        was taken before."""
        if not (addressed or await _followed(incoming, event, stores, own)):
            return None
        incoming = await bridge.conversation.placed(incoming)
        if incoming.event_channel_type == "im":
            # The agent view says what the person is looking at as they write: kept before
            # the turn, which reads it to widen recall.
            await bridge.assistant.looking_at(event, incoming.team, incoming.user)
        placed = incoming
        # A retry has the same event id; a mention also arrives as a message event.
        entry = await stores.run(lambda stores: stores.inbox.take(
            (f"event:{placed.event_id}", f"msg:{placed.channel}:{placed.ts}"),
            lane=placed.session_key,
            kind=MESSAGE,
            payload=message_payload(placed),
        ))
        return None if entry is None else (placed, entry)

    return [
        Listener("event", "app_mention", lambda body: accept(body, addressed=True)),
        # A DM is addressed to the agent; elsewhere a message is answered in a thread the
        # agent is part of.
        Listener("event", "message", lambda body: accept(
            body, addressed=(body.get("event") or {}).get("channel_type") == "im")),
    ]


MESSAGE = "message"
REACTION = "reaction"


def message_payload(incoming: Incoming) -> dict[str, Any]:
    """What the inbox keeps of a message: all of it, its text redacted (and its files'
    names and titles, which people type too; their addresses are Slack's)."""
    files = [{**file, **{key: redact(str(file[key])) for key in ("name", "title")
                         if file.get(key)}} for file in incoming.files]
    return {**dataclasses.asdict(incoming), "text": redact(incoming.text), "files": files}


def incoming_of(payload: dict[str, Any]) -> Incoming:
    """A message the inbox kept (``message_payload``), as it was taken."""
    return Incoming(**{**payload, "files": tuple(payload.get("files") or ())})


def take_over(bridge: SlackTransport, entry: InboxEntry) -> None:
    """Run, on this replica, a delivery whose process died before it was done."""
    if entry.kind == MESSAGE:
        incoming = incoming_of(entry.payload)
        team = incoming.team
        work = lambda: bridge.runner.as_turn(  # noqa: E731
            bridge.conversation.take_over(incoming), who=incoming.user
        )
    elif entry.kind == REACTION:
        event, added = entry.payload["event"], bool(entry.payload["added"])
        team = str(entry.payload.get("team") or "")
        work = lambda: bridge.reactions.handle(event, added=added)  # noqa: E731
    else:
        log.error("the Slack inbox holds a delivery of an unknown kind: %s", entry.kind)
        return
    bridge.runner.submit(_in_its_workspace(bridge, team, entry, work), turn=False)


async def _in_its_workspace(bridge: SlackTransport, team: str, entry: InboxEntry,
                            work: Callable[[], Awaitable[object]]) -> None:
    """A delivery taken over, with the token of the workspace it came from."""
    if bridge.workspace_of is None:
        await bridge.delivery_order.run(entry, work)
        return
    workspace = await bridge.workspace_of(team)
    if workspace is None:
        log.warning("a delivery for workspace %s is dropped: Thoth is no longer installed"
                    " there", team or "(unknown)")
        work = lambda: asyncio.sleep(0)  # noqa: E731  (done in its turn, nothing said)
    with serving(workspace):
        await bridge.delivery_order.run(entry, work)


def _reactions_and_clicks(bridge: SlackTransport) -> list[Listener]:
    reactions, stores = bridge.reactions, bridge.offloaded

    async def accept(body: dict[str, Any], *, added: bool) -> None:
        event = body.get("event") or {}
        item = event.get("item") or {}
        # Reactions on one message apply in the order Slack sent them, across replicas
        # (an add and its removal a moment later must not swap).
        try:
            entry = await bridge.delivery_order.intake.take(
                lambda: stores.run(lambda stores: stores.inbox.take(
                    (f"event:{body['event_id']}",) if body.get("event_id") else (),
                    lane=f"reaction:{item.get('channel')}:{item.get('ts')}",
                    kind=REACTION,
                    payload={"event": event, "added": added, "team": body.get("team_id")},
                )),
                f"a Slack reaction in {item.get('channel')}")
        except (StillAway, StorageFull) as unkept:
            # Nobody to tell: a reaction has no thread of its own.
            log.error("a reaction in %s was not kept: %s", item.get("channel"),
                      "the disk is full" if isinstance(unkept, StorageFull)
                      else "the database stayed away")
            return
        if entry is not None:
            await bridge.delivery_order.run(entry, lambda: reactions.handle(event, added=added))

    return [
        Listener("event", "reaction_added", lambda body: accept(body, added=True)),
        Listener("event", "reaction_removed", lambda body: accept(body, added=False)),
        Listener("action", FEEDBACK_ACTION, lambda body: _feedback(reactions, body)),
        *_tool_cards(bridge),
        *_routine_cards(bridge),
        Listener("action", APPROVE_ACTION,
                 lambda body: _decide(reactions, body, approve=True)),
        Listener("action", REJECT_ACTION,
                 lambda body: _decide(reactions, body, approve=False)),
    ]


def _tool_cards(bridge: SlackTransport) -> list[Listener]:
    """The buttons of a card asking for a team's tool call (``tool_approvals.py``)."""
    conversation = bridge.conversation

    def answer(allowed: bool) -> Work:
        async def clicked(body: dict[str, Any]) -> None:
            asking = conversation.tool_asks
            if asking is None:
                return
            answered = await asking.clicked(body, allowed=allowed)
            if answered is not None:
                await conversation.go_on(answered)

        return clicked

    return [Listener("action", ALLOW_ONCE, answer(True)),
            Listener("action", ALLOW_ALWAYS, answer(True)),
            Listener("action", DENY, answer(False)),
            # The link's button opens the console in the browser; Slack still tells the
            # app of the click, which has nothing to do.
            Listener("action", CONNECT_BUTTON, lambda body: None)]


def _routine_cards(bridge: SlackTransport) -> list[Listener]:
    """The buttons of a routine's card (Create / Cancel) and of `/thoth routines`
    (``routine_cards.py``)."""
    cards = bridge.conversation.routine_cards
    if cards is None:
        return []

    def manage(action: str) -> Work:
        return lambda body: cards.manage(body, action)

    return [Listener("action", ROUTINE_CREATE, cards.create),
            Listener("action", ROUTINE_CANCEL, cards.cancel),
            *(Listener("action", action, manage(action))
              for action in (ROUTINE_PAUSE, ROUTINE_RESUME, ROUTINE_RUN_NOW, ROUTINE_DELETE))]


def _the_ai_pane(bridge: SlackTransport) -> list[Listener]:
    assistant = bridge.assistant

    def team_of(body: dict[str, Any]) -> str:
        return str(body.get("team_id") or "")

    def home_opened(body: dict[str, Any]) -> Coroutine[Any, Any, object]:
        event = body.get("event") or {}
        if event.get("tab") == "home" and event.get("user"):
            return bridge.home.publish(team_of(body), str(event["user"]),
                                       org=enterprise_of(body))
        return assistant.opened(event, team_of(body))

    def app_context_changed(body: dict[str, Any]) -> Coroutine[Any, Any, object]:
        event = body.get("event") or {}
        # Slack's reference example names the person only in the envelope's authorizations
        # (the one that is not a bot); other payloads carry the event's own user.
        people = [a for a in body.get("authorizations") or [] if not a.get("is_bot")]
        user = str(event.get("user") or (people[0].get("user_id") if people else "") or "")
        return assistant.looking_at(event, team_of(body), user)

    return [
        Listener("event", "assistant_thread_started",
                 lambda body: assistant.started(body.get("event") or {}, team_of(body))),
        Listener("event", "app_home_opened", home_opened),
        Listener("event", "assistant_thread_context_changed",
                 lambda body: assistant.keep_context(body.get("event") or {})),
        Listener("event", "app_context_changed", app_context_changed),
    ]


def _connections_ended(thoth: Thoth) -> Callable[[str], Awaitable[object]] | None:
    """What ends every connection of a workspace that uninstalled Thoth (None: no server
    takes people's own accounts)."""
    tools = thoth.team_tools
    if tools is None or tools.connector is None:
        return None
    connector = tools.connector

    async def ended(team: str) -> None:
        ended = await connector.disconnect_all(team, actor="slack", origin="app_uninstalled")
        await tools.disconnected(team)
        log.warning("workspace %s uninstalled Thoth: %d connection(s) revoked and deleted",
                    team, ended)

    return ended


def _people_leaving(thoth: Thoth) -> list[Listener]:
    """A person deactivated in Slack (``user_change`` with ``deleted``) has their routines
    paused, and loses every connection of theirs to the team's remote servers: revoked,
    and deleted. (Thoth leaving a channel: ``_thoth_leaving_channels``.)"""
    tools = thoth.team_tools
    connector = None if tools is None else tools.connector
    paused = _routines_paused(thoth)

    async def changed(body: dict[str, Any]) -> None:
        user = (body.get("event") or {}).get("user") or {}
        if not user.get("deleted") or not user.get("id"):
            return
        person = str(user["id"])
        # Every workspace's: on Enterprise Grid one user id is the person in each of the
        # org's workspaces they asked from.
        if paused is not None:
            await paused(CREATOR_DEACTIVATED, "user_change (deactivated)",
                         creator=person)
        if tools is None or connector is None:
            return
        ended = await connector.disconnect_all(None, person, actor="slack",
                                               origin="user_change (deactivated)")
        await tools.disconnected(None, person)
        if ended:
            log.warning("%s was deactivated in Slack: %d connection(s) revoked and deleted",
                        person, ended)

    # Bolt runs the first listener an event matches: user_change has this one only.
    return [Listener("event", "user_change", changed), *_thoth_leaving_channels(thoth)]


PauseRoutines = Callable[..., Coroutine[Any, Any, list[str]]]


def _routines_paused(thoth: Thoth) -> PauseRoutines | None:
    """What pauses routines (of a creator, or posting to a channel), each pause audited;
    None with routines off."""
    if thoth.routines is None:
        return None
    store, audit = thoth.routines.store, Offloaded(thoth.audit)

    async def pause(why: str, origin: str, *, creator: str | None = None,
                    channel: str | None = None) -> list[str]:
        ids = await store.run(lambda routines: routines.pause_where(
            why=why, creator=creator, channel=channel))

        def record(entries: AuditLog) -> None:
            for routine_id in ids:
                entries.record(actor="slack", action="routine.pause",
                               target=f"routine:{routine_id}", origin=origin, detail=why)

        await audit.run(record)
        if ids:
            log.warning("%d routine(s) paused: %s", len(ids), why)
        return ids

    return pause


def _thoth_leaving_channels(thoth: Thoth) -> list[Listener]:
    """Thoth removed from a channel (``channel_left``) or a private one (``group_left``),
    as Slack tells the app: the routines that post there are paused (they could no
    longer post, and a channel that removed Thoth did not ask to hear from it)."""
    paused = _routines_paused(thoth)
    if paused is None:
        return []
    pause = paused

    def left(kind: str) -> Work:
        def work(body: dict[str, Any]) -> Coroutine[Any, Any, object] | None:
            channel = str((body.get("event") or {}).get("channel") or "")
            if not channel:
                return None
            return pause("Thoth was removed from its channel", kind, channel=channel)

        return work

    return [Listener("event", kind, left(kind)) for kind in ("channel_left", "group_left")]


def _slash_work(bridge: SlackTransport, command: Command, client: AsyncWebClient) -> Work:
    return lambda body: slash_command(command, bridge.conversation, client, body)


def _the_home_tab_and_shortcuts(bridge: SlackTransport) -> list[Listener]:
    home, shortcuts = bridge.home, bridge.shortcuts

    def clicked(body: dict[str, Any]) -> tuple[str, str, str]:
        """Who clicked on their Home tab (workspace, user) and the button's value."""
        action = (body.get("actions") or [{}])[0]
        team = str((body.get("team") or {}).get("id") or (body.get("user") or {}).get(
            "team_id") or "")
        return team, str((body.get("user") or {}).get("id") or ""), str(action.get("value"))

    def forget_fact(body: dict[str, Any]) -> Coroutine[Any, Any, object]:
        team, user, fact_id = clicked(body)
        return home.forget_fact(team, user, fact_id, org=enterprise_of(body))

    def forget_everything(body: dict[str, Any]) -> Coroutine[Any, Any, object]:
        team, user, _ = clicked(body)
        return home.forget_everything(team, user, org=enterprise_of(body))

    def decide_note(keep: bool) -> Work:
        def decide(body: dict[str, Any]) -> Coroutine[Any, Any, object]:
            team, user, note_id = clicked(body)
            return home.decide_note(team, user, note_id, keep=keep)
        return decide

    return [
        Listener("action", FORGET_FACT, forget_fact),
        Listener("action", FORGET_EVERYTHING, forget_everything),
        Listener("action", KEEP_NOTE, decide_note(True)),
        Listener("action", REJECT_NOTE, decide_note(False)),
        Listener("shortcut", REMEMBER_THIS, shortcuts.remember),
        Listener("shortcut", FORGET_THIS, shortcuts.forget),
    ]


async def _followed(
    incoming: Incoming, event: dict[str, Any], stores: Offloaded[SlackStores],
    bot_user: str | None,
) -> bool:
    """A message the agent answers without being named: in a thread it is part of."""
    if mentions(str(event.get("text") or ""), bot_user):
        return True
    return event.get("thread_ts") is not None and await stores.run(
        lambda stores: stores.replies.in_thread(incoming.channel, incoming.thread_root))


async def _decide(reactions: Reactions, body: dict[str, Any], *, approve: bool) -> None:
    action = (body.get("actions") or [{}])[0]
    channel, ts, thread_ts = _clicked_message(body)
    await reactions.decide(
        str(action.get("value")),
        approve=approve,
        user=str((body.get("user") or {}).get("id")),
        channel=channel,
        ts=ts,
        thread_ts=thread_ts,
    )


async def _feedback(reactions: Reactions, body: dict[str, Any]) -> None:
    action = (body.get("actions") or [{}])[0]
    channel, ts, _ = _clicked_message(body)
    await reactions.feedback_clicked(
        channel=channel, ts=ts, user=str((body.get("user") or {}).get("id")),
        value=str(action.get("value")),
    )


def _clicked_message(body: dict[str, Any]) -> tuple[str, str, str | None]:
    """The channel, ts and thread of the message whose button was clicked."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id"))
    ts = str(container.get("message_ts") or message.get("ts"))
    thread_ts = container.get("thread_ts") or message.get("thread_ts")
    return channel, ts, None if thread_ts is None else str(thread_ts)
