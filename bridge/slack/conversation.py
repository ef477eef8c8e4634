"""One Slack message through the turn pipeline, and the text commands in threads.

The table's commands with a text form (``done``, ``recall QUERY``: ``bridge/commands/``)
also work as text addressed to the agent in a thread or DM: Slack does not deliver slash
commands from inside threads.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge import messages
from bridge.commands import CommandServices, Invocation, Reply, Where, run
from bridge.commands.table import typed_in_a_thread
from bridge.console_links import ConsoleLinks
from bridge.files.reader import FileReader
from bridge.files.reading import Limits, Read, Unread
from bridge.pipeline.episodes_block import episodes_text, hit_lines
from bridge.pipeline.pipeline import TurnPipeline
from bridge.pipeline.shared_files import file_names, with_files_named
from bridge.pipeline.turn import Turn, check_message, viewer_at, words_or_files
from bridge.slack.answered_call import AnsweredCall
from bridge.slack.assistant import AssistantThreads
from bridge.slack.events import Incoming
from bridge.slack.message_files import MessageFiles, unread_lines
from bridge.slack.replies import ReplyRecord
from bridge.slack.routine_cards import RoutineCards
from bridge.slack.stores import SlackStores
from bridge.slack.thread_reply import SlackSink
from bridge.slack.tool_approvals import SlackApprovals, ToolAsking
from bridge.slack_api.clients import SLACK_FAILURES
from bridge.slack_api.directory import Directory, UserInfo, confined_reader, place_team
from bridge.slack_api.escaping import escape, split_message
from bridge.slack_api.file_downloads import file_name
from bridge.slack_api.followup_posts import CANCEL
from bridge.slack_api.workspace_client import bot_user
from layers.episodic.episode import Episode
from layers.shared.errors import BadInput
from layers.shared.offloaded import Offloaded
from layers.shared.one_line import one_line
from layers.shared.places import LOCAL_TEAM, Place
from layers.working.sessions import Session

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConversationDependencies:
    """What a Slack conversation uses of the app (built once, in ``bolt_app.build_bridge``)."""

    stores: Offloaded[SlackStores]
    pipeline: TurnPipeline
    # What the table's commands use (``bridge/commands/``).
    commands: CommandServices
    # Where the console shows an episode (CONSOLE_URL), for /recall's links.
    console: ConsoleLinks | None = None
    # Reads shared files within FILE_MAX_MB (``bridge.app``: one for the process).
    file_reader: FileReader = field(default_factory=lambda: FileReader(Limits()))
    # Asks a person on a card before a team's tool that may change something runs (None
    # without team tools: ``tool_approvals.py``).
    tool_asks: ToolAsking | None = None
    # Shows a routine the model proposes on a card, and takes its clicks and those of
    # `/thoth routines` (None where routines are not made: ``routine_cards.py``).
    routine_cards: RoutineCards | None = None


class Conversation:
    """What the bridge does with a message once Bolt has acknowledged it."""

    def __init__(
        self,
        parts: ConversationDependencies,
        client: AsyncWebClient,
        directory: Directory,
        assistant: AssistantThreads,
        *,
        bot_user: str | None,
    ) -> None:
        self._parts = parts
        self._stores = parts.stores
        self._bot_user = bot_user
        self._client = client
        self._directory = directory
        self._assistant = assistant
        self._files = MessageFiles(client, parts.file_reader)

    async def handle(self, incoming: Incoming) -> None:
        place, user, confined = await self._place_and_name(incoming)
        typed = typed_in_a_thread(incoming.text)
        looking_at = None
        if place.channel_type == "im":
            looking_at = await self._assistant.viewing(
                incoming.team, incoming.channel, incoming.thread_root, incoming.user
            )
        if typed is not None:
            command, args = typed
            invocation = Invocation(
                args, incoming.user, place, Where.THREAD,
                viewer_at(place, incoming.user, looking_at, confined=confined),
                session_key=incoming.session_key, zone=user.tz,
            )
            reply = await run(command, invocation, self._parts.commands)
            await self.say_in_thread(incoming.channel, incoming.thread_root, reply)
            return
        if CANCEL.search(incoming.text):
            cancelled = await self._stores.run(lambda stores: stores.followups.cancel(
                channel=incoming.channel, thread_ts=incoming.thread_root))
            if cancelled:
                text = messages.FOLLOWUP_CANCELLED
                await self._post(incoming.channel, incoming.thread_root, text)
                return
        try:
            check_message(_as_said(incoming))
        except BadInput as error:
            await self._post(incoming.channel, incoming.thread_root, f"Sorry: {error}.")
            return
        session = await self._stores.run(
            lambda stores: stores.sessions.open(incoming.session_key, place))
        turns_so_far = await self._stores.run(
            lambda stores: stores.transcript.count(session.id))
        files = await self._files.of(incoming, first_turn=turns_so_far == 0)
        await self._say_unread(incoming, files)
        text = words_or_files(incoming.text, file_names(files))
        turn = Turn(
            incoming.session_key,
            text,
            place,
            user=incoming.user,
            user_name=user.name,
            zone=user.tz,
            event_id=incoming.event_id,
            looking_at=looking_at,
            confined=confined,
            org=incoming.enterprise,
            files=files,
            approvals=self._approvals_in(incoming.channel, incoming.thread_root),
        )
        # A DM thread's first message names it in Slack's AI pane (beside the turn, so the
        # reply never waits for it; Slack refuses titles elsewhere, quietly).
        naming = (
            self._assistant.name_thread(incoming.channel, incoming.thread_root, text)
            if place.channel_type == "im" and turns_so_far == 0
            else asyncio.sleep(0)
        )
        await asyncio.gather(self._answer(
            turn, session, thread_root=incoming.thread_root,
            # The reader's own workspace, as chat.startStream documents it ("the team the
            # user receiving the streaming text belongs to"): in a Slack Connect channel
            # or across an Enterprise Grid org that is the event's user_team, not the
            # team the event was delivered for.
            reader_team=incoming.user_team or incoming.team, slack_channel=incoming.channel,
        ), naming)

    async def go_on(self, answered: AnsweredCall) -> None:
        """The conversation after a person answered a tool call it asked about (their
        card): a turn of its own in the thread, the model told what was decided and what
        the tool answered."""
        ask = answered.ask
        place = ask.place
        session = await self._stores.run(
            lambda stores: stores.sessions.open(ask.session_key, place))
        turn = Turn(ask.session_key, answered.words, place, user=ask.asker,
                    user_name=ask.asker_name, answered_call=answered.outcome,
                    approvals=self._approvals_in(place.channel, place.thread_ts or ""))
        await self._answer(turn, session, thread_root=place.thread_ts or "",
                           reader_team=answered.reader_team or place.team,
                           slack_channel=place.channel)

    async def _answer(self, turn: Turn, session: Session, *, thread_root: str,
                      reader_team: str, slack_channel: str) -> None:
        """Run the turn, its reply streamed into the thread and each message of it linked
        to the episode it becomes."""
        place, asker = turn.place, turn.user

        async def posted(ts: str) -> None:
            # Recorded as soon as it exists: a reaction or a follow-up in the thread may
            # come while the reply is still streaming. The episode is filled in after.
            record = ReplyRecord(slack_channel, ts, place.team, thread_root, session.id,
                                 None, asker)
            try:
                await self._stores.run(lambda stores: stores.replies.record(record))
            except Exception as error:
                # The disk filled or the database went away mid-turn: the reply goes on.
                # Reactions to it will not find their turn, and a turn taken over finds it
                # in the thread itself (``_begun_replies``).
                log.warning("a reply in %s was posted but not recorded (%s: %s)",
                            slack_channel, type(error).__name__,
                            one_line(error))

        sink = SlackSink(
            self._client,
            channel=slack_channel,
            thread_ts=thread_root,
            recipient_user=asker,
            recipient_team=reader_team,
            on_posted=posted,
        )
        outcome = await self._parts.pipeline.handle(turn, sink, session=session)
        episode_id = outcome.episode_id
        if episode_id is not None:
            posted_ts = list(sink.posted)

            def link(stores: SlackStores) -> None:
                for ts in posted_ts:
                    stores.replies.set_episode(slack_channel, ts, episode_id)

            await self._stores.run(link)

    @property
    def tool_asks(self) -> ToolAsking | None:
        return self._parts.tool_asks

    @property
    def routine_cards(self) -> RoutineCards | None:
        return self._parts.routine_cards

    def _approvals_in(self, channel: str, thread_root: str) -> SlackApprovals | None:
        """How a turn in this thread asks its speaker to allow a team's tool, or to
        create the routine it proposes (None with neither)."""
        asking, routines = self._parts.tool_asks, self._parts.routine_cards
        if asking is None and routines is None:
            return None
        return SlackApprovals(asking, channel, thread_root, routines)

    async def take_over(self, incoming: Incoming) -> None:
        """A message a process that died had taken (its text redacted): answered unless
        that process had recorded its turn already.

        Its lane kept every later message of the thread waiting, so a recorded turn is
        the session's latest, and a reply the dead process had begun is the agent's last
        in the thread: cut off mid-stream, it is deleted before the whole answer is
        given. (Decided: the same words said twice in a row, the second taken over,
        count as answered.)
        """
        session = await self._stores.run(
            lambda stores: stores.sessions.find_open(incoming.session_key))
        if session is not None:
            open_id = session.id
            last = await self._stores.run(
                lambda stores: stores.transcript.last_user_text(open_id))
            if last == _as_kept(incoming):
                log.info("a message taken over in %s was answered already", incoming.channel)
                return
        for ts in await self._begun_replies(incoming):
            try:
                await self._client.chat_delete(channel=incoming.channel, ts=ts)
            except SLACK_FAILURES as error:
                log.warning("a cut-off reply in %s could not be deleted (%s)",
                            incoming.channel, _failure(error))
        await self.handle(incoming)

    async def _say_unread(self, incoming: Incoming, files: tuple[Read | Unread, ...]) -> None:
        """The files not read, said to the person in one message before the answer (the
        model is told too, and answers the rest)."""
        lines = unread_lines(files)
        if not lines:
            return
        try:
            await self._post(incoming.channel, incoming.thread_root, lines)
        except SLACK_FAILURES as error:
            log.warning("the files not read in %s could not be said (%s)", incoming.channel,
                        _failure(error))

    async def _begun_replies(self, incoming: Incoming) -> list[str]:
        """The agent's messages in the thread since ``incoming``: those recorded, and
        those Slack has (a process can die between Slack making a message and the
        record of it). If Slack will not show the thread (a token without the history
        scope, say), those recorded are all there is: the turn goes on with them."""
        recorded = await self._stores.run(lambda stores: stores.replies.posted_after(
            incoming.channel, incoming.thread_root, incoming.ts))
        found = set(recorded)
        own = bot_user(self._bot_user)
        if own is not None:
            try:
                response = await self._client.conversations_replies(
                    channel=incoming.channel, ts=incoming.thread_root, oldest=incoming.ts,
                    limit=200,
                )
            except SLACK_FAILURES as error:
                log.warning(
                    "the thread %s in %s could not be read to find a cut-off reply (%s); "
                    "deleting the %d on record only",
                    incoming.thread_root, incoming.channel, _failure(error), len(recorded),
                )
            else:
                found.update(
                    str(message["ts"])
                    for message in response.get("messages") or []
                    if message.get("user") == own
                    and float(message["ts"]) > float(incoming.ts)
                )
        return sorted(found)

    @property
    def directory(self) -> Directory:
        return self._directory

    @property
    def commands(self) -> CommandServices:
        return self._parts.commands

    async def tell(self, incoming: Incoming, text: str) -> None:
        """One line to the person in their message's thread, without the database (a
        failure to post is logged: there is nothing else to tell them with)."""
        try:
            await self._post(incoming.channel, incoming.thread_root, text)
        except SLACK_FAILURES as error:
            log.warning("telling %s in %s failed (%s)", incoming.user, incoming.channel,
                        _failure(error))

    async def say_in_thread(self, channel: str, thread_ts: str, reply: Reply) -> None:
        """A command's reply, for everyone in the thread."""
        markdown = await self.reply_markdown(reply, with_links=False)
        if markdown:
            await self._post_markdown(channel, thread_ts, markdown)

    async def reply_markdown(self, reply: Reply, *, with_links: bool) -> str:
        """A command's reply as Slack Markdown: what memory holds is escaped, the links
        Thoth adds (with ``with_links``, for /recall's private answer) are live."""
        if reply.mistake:
            # Slack's way to say a person's input was wrong (the terminal's is "error:").
            return escape(f"Sorry: {reply.text}" + ("" if reply.text[-1:] in ".?!" else "."))
        if not reply.hits:
            return reply.text if reply.markdown else escape(reply.text)
        if not with_links:
            return escape(episodes_text(reply.hits))
        lines = []
        for hit in reply.hits:
            line = escape(hit_lines(hit))
            links = [f"[open the thread]({link})"
                     for link in [await self._permalink(hit.episode)] if link]
            if self._parts.console is not None:
                links.append(f"[in the console]({self._parts.console.episode(hit.episode.id)})")
            lines.append(f"{line}\n  {' · '.join(links)}" if links else line)
        return "\n".join(lines)

    async def _permalink(self, episode: Episode) -> str | None:
        if not episode.thread_ts or episode.team == LOCAL_TEAM:
            return None
        try:
            response = await self._client.chat_getPermalink(
                channel=episode.channel, message_ts=episode.thread_ts
            )
        except SLACK_FAILURES:
            return None
        return str(response.get("permalink") or "") or None

    async def placed(self, incoming: Incoming) -> Incoming:
        """``incoming``, kept as the org's when its channel is shared across the org's
        workspaces (``directory.place_team``): asked before its session is known."""
        channel = await self._directory.channel(incoming.channel, incoming.event_channel_type)
        team = place_team(channel, incoming.team, incoming.enterprise)
        return incoming if team == incoming.team else replace(incoming, shared_by_org=team)

    async def _place_and_name(self, incoming: Incoming) -> tuple[Place, UserInfo, bool]:
        """Where it was said, who the speaker is (their name, their time zone), and whether
        they see only this channel's own memory (Slack Connect, a guest, another
        workspace's person)."""
        channel = await self._directory.channel(incoming.channel, incoming.event_channel_type)
        user = await self._directory.user(incoming.user)
        place = Place(
            incoming.place_team,
            incoming.channel,
            channel.channel_type,
            incoming.thread_root,
            channel.name,
        )
        confined = confined_reader(channel, user, incoming.team, incoming.user_team)
        return place, user, confined

    async def _post(self, channel: str, thread_ts: str, text: str) -> None:
        await self._post_markdown(channel, thread_ts, escape(text))

    async def _post_markdown(self, channel: str, thread_ts: str, markdown: str) -> None:
        for piece in split_message(markdown):
            await self._client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, markdown_text=piece
            )


def _as_said(incoming: Incoming) -> str:
    """What the message says before its files are read: its words, or its files' names."""
    return words_or_files(incoming.text, ", ".join(file_name(f) for f in incoming.files))


def _as_kept(incoming: Incoming) -> str:
    """The message as the transcript keeps it (``with_files_named``), as far as the
    message itself tells: files carried from its thread's root are not in it."""
    named = [Unread(file_name(file), "") for file in incoming.files]
    return with_files_named(_as_said(incoming), named)


def _failure(error: Exception) -> str:
    """A failed Slack call on one line: Slack's error code (with the scope it said was
    needed), or the network's complaint."""
    if isinstance(error, SlackApiError):
        code = str(error.response.get("error"))
        needed = error.response.get("needed")
        return f"{code}: needs {needed}" if needed else code
    return " ".join(f"{type(error).__name__}: {error}".split())
