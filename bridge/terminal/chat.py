"""`thoth chat`: the turn pipeline in a terminal, or over stdin when it is not one.

The event loop runs in its own thread for the whole chat, so background writes
(episodes) progress while the main thread waits for the next line, and
``input()`` with readline (line editing, history) stays on the main thread.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import threading
import uuid
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any, TextIO, TypeVar

from apscheduler.schedulers.background import BackgroundScheduler

from bridge import messages
from bridge.commands import CommandServices, Invocation, Where, run
from bridge.commands.table import terminal_usage, typed_in_the_terminal
from bridge.files.reading import Limits, Read, Unread
from bridge.housekeeping import Housekeeping
from bridge.pipeline.episodes_block import episodes_text
from bridge.pipeline.pipeline import TurnPipeline
from bridge.pipeline.shared_files import file_names
from bridge.pipeline.turn import Turn, check_message, words_or_files
from bridge.terminal.attach import (
    ATTACH,
    attach_path,
    attached_line,
    check_room,
    local_file,
)
from bridge.terminal.printed_reply import TerminalSink
from bridge.terminal.tool_approval import TerminalApprovals
from layers.identity.ingest_queue import IngestQueue
from layers.shared.errors import BadInput
from layers.shared.places import LOCAL_TEAM, TERMINAL_CHANNEL, Place, Viewer
from layers.shared.redaction import redact
from layers.working.sessions import Session, SessionStore

log = logging.getLogger(__name__)

T = TypeVar("T")
DRAIN_TIMEOUT_S = 30.0
# How long the chat waits at exit for the identity backend: what it has not taken by
# then stays in the durable outbox and goes at the next start, so a slow or unreachable
# Honcho never holds the terminal (it took 43 s before).
IDENTITY_EXIT_WAIT_S = 1.5


@dataclass(frozen=True)
class ChatOptions:
    user: str
    session_id: str | None = None
    interactive: bool = False
    history_file: Path | None = None
    # Files given with --file, read: they go with the first message.
    files: tuple[Read | Unread, ...] = ()
    # How much of a file /attach reads (FILE_MAX_MB).
    limits: Limits = Limits()


@dataclass(frozen=True)
class ChatDependencies:
    """What a terminal chat uses of the app (built in ``bridge/cli/chat.py``)."""

    pipeline: TurnPipeline
    sessions: SessionStore
    # What the chat's commands use (`/recall`, `/done`, `/quit`: bridge/commands/).
    commands: CommandServices
    identity_ingest: IngestQueue | None
    housekeeping: Housekeeping
    # Loads the embedding model and the vector index before the first turn.
    warm_up: Callable[[], None]


def terminal_place() -> Place:
    """A terminal chat is a DM with the local user: recall follows the DM rule."""
    return Place(LOCAL_TEAM, TERMINAL_CHANNEL, "im", None, TERMINAL_CHANNEL)


class ChatLoop:
    def __init__(self, parts: ChatDependencies, options: ChatOptions, out: TextIO,
                 err: TextIO) -> None:
        self._parts = parts
        self._options = options
        self._out = out
        self._err = err
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.bad_lines = 0
        # The files attached since the last message: they go with the next one.
        self._attached: list[Read | Unread] = list(options.files)

    def run(self, lines: Iterator[str]) -> int:
        """Chat until /done, /quit or the end of input; returns the exit code."""
        self._thread.start()
        scheduler = BackgroundScheduler(timezone=UTC)
        self._parts.housekeeping.schedule(scheduler, self._call)
        scheduler.start()
        try:
            # Piped, a new session is opened by the first message that is one, so input
            # with nothing to say (blank, refused, only /recall) stores nothing. A
            # resumed one is looked up now: a wrong id ends the chat before any input.
            session = None
            if self._options.interactive or self._options.session_id:
                session = self._open_session()
            if self._options.interactive and session is not None:
                print(messages.CHAT_BANNER.format(session_id=session.id), file=self._err)
            self._parts.warm_up()
            for file in self._attached:
                print(attached_line(file), file=self._out)
            session = self._converse(session, lines)
            if self._attached:
                print(messages.ATTACHED_NOT_SENT.format(
                    names=file_names(self._attached)), file=self._err)
            if self._options.interactive and session is not None and self._still_open(session):
                print(messages.CHAT_RESUME_HINT.format(short_id=session.id[:8]), file=self._err)
        finally:
            scheduler.shutdown(wait=True)
            # Episodes of the last turns (local, quick), identity ingest as long as it is
            # quick, then the model's client.
            self._call(self._parts.pipeline.drain(DRAIN_TIMEOUT_S))
            if self._parts.identity_ingest is not None:
                unsent = self._call(self._parts.identity_ingest.drain(IDENTITY_EXIT_WAIT_S))
                if unsent:
                    print(messages.IDENTITY_KEPT.format(count=unsent), file=self._err)
            self._call(self._parts.pipeline.model.aclose())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        return 2 if self.bad_lines else 0

    def _converse(self, session: Session | None, lines: Iterator[str]) -> Session | None:
        """Answer each line; returns the session, if one was opened."""
        for raw in lines:
            line = raw.rstrip("\r\n")
            # An empty line sends the files attached, if there are any.
            if not line.strip() and not self._attached:
                continue
            path = attach_path(line)
            if path is not None:
                self._attach(path)
                continue
            if line.strip().startswith("/"):
                if self._command(session, line):
                    return session
                continue
            text = words_or_files(line, file_names(self._attached))
            try:
                check_message(text)
            except BadInput as error:
                self._bad(str(error))
                continue
            if session is None:
                session = self._open_session()
            turn = Turn(
                session.key,
                text,
                session.place,
                user=self._options.user,
                user_name=self._options.user,
                files=tuple(self._attached),
                approvals=TerminalApprovals(lines, self._out),
            )
            self._attached.clear()
            prefix = "thoth> " if self._options.interactive else ""
            sink = TerminalSink(self._out, prefix=prefix)
            try:
                self._call(self._parts.pipeline.handle(turn, sink))
            except KeyboardInterrupt:
                # Ctrl-C stops this reply, not the chat; the unfinished turn is not stored.
                print("\n(interrupted)", file=self._err)
            if sink.closed:
                # Nobody reads the replies any more: the chat ends as `head` expects.
                raise BrokenPipeError(errno.EPIPE, "the reader of the chat's output is gone")
        return session

    def _attach(self, path: str) -> None:
        """Read the file at ``path`` for the next message, saying so (or why not)."""
        try:
            check_room(len(self._attached))
            file = local_file(path, self._options.limits)
        except BadInput as error:
            self._bad(str(error))
            return
        self._attached.append(file)
        print(attached_line(file), file=self._out)

    def _command(self, session: Session | None, line: str) -> bool:
        """Run the chat command ``line`` names, saying its reply; True when the chat ends."""
        typed = typed_in_the_terminal(line)
        if typed is None:
            named = line.strip().partition(" ")[0]
            self._bad(f"unknown command {named}: use {ATTACH} PATH, {terminal_usage()}")
            return False
        command, args = typed
        place = session.place if session is not None else terminal_place()
        invocation = Invocation(args, self._options.user, place, Where.TERMINAL,
                                self._viewer(),
                                session_key=session.key if session is not None else None)
        # An idle sweep may have ended the first session and the chat gone on in a new one:
        # the key is the chat's, the session the one open under it.
        reply = self._call(run(command, invocation, self._parts.commands))
        if reply.mistake:
            self._bad(reply.text)
        elif reply.hits:
            print(episodes_text(reply.hits), file=self._out)
        elif reply.text:
            print(reply.text, file=self._out)
        return reply.ends_chat

    def _still_open(self, session: Session) -> bool:
        """Whether the session may be resumed (not after /done, or an idle end)."""
        now = self._parts.sessions.get(session.id)
        return now is not None and not now.ended

    def _open_session(self) -> Session:
        sessions = self._parts.sessions
        if self._options.session_id:
            return sessions.resume(self._options.session_id)
        return sessions.open(f"terminal:{uuid.uuid4()}", terminal_place())

    def _viewer(self) -> Viewer:
        place = terminal_place()
        return Viewer(place.team, place.channel, place.channel_type, self._options.user)

    def _bad(self, message: str) -> None:
        self.bad_lines += 1
        print(f"error: {message}", file=self._err)

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise


def terminal_lines(prompt: str, history_file: Path | None) -> Iterator[str]:
    """Lines typed at a terminal, with readline editing and a persistent history."""
    save_history: Callable[[], None] = lambda: None  # noqa: E731
    try:
        import readline

        if history_file is not None:
            history_file.parent.mkdir(parents=True, exist_ok=True)
            if history_file.exists():
                readline.read_history_file(history_file)
            readline.set_history_length(1000)
            save_history = lambda: readline.write_history_file(history_file)  # noqa: E731
    except (ImportError, OSError):
        log.info("readline unavailable; plain input")
    try:
        while True:
            try:
                line = input(prompt)
                _keep_secrets_out_of_history(line)
                yield line
            except EOFError:
                return
            except KeyboardInterrupt:
                print()
                continue
    finally:
        try:
            save_history()
        except OSError:
            log.warning("could not save chat history to %s", history_file)


def _keep_secrets_out_of_history(line: str) -> None:
    """Replace the line readline just remembered by its redacted form (the file is on disk)."""
    clean = redact(line)
    if clean == line:
        return
    try:
        import readline

        last = readline.get_current_history_length()
        if last:
            readline.replace_history_item(last - 1, clean)
    except (ImportError, ValueError):
        pass
