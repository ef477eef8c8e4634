"""The commands a person types — `/recall`, `/done`, `/thoth token`, the chat's `/quit` —
each one entry in one table (``table.py``), whatever the transport.

A command is written once, against what it acts on (``Invocation``: who typed it, where,
what they may read; ``CommandServices``: the stores it may use), and answers with a
``Reply`` the transport shows its own way: Slack privately (or in the thread), the
terminal on stdout. Bolt registers the table's slash commands in a loop, acking in one
place; a thread's text commands ("done", "recall X") and the chat's lines are matched
against the same table.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.access.tokens import McpTokens
from bridge.connections.oauth_client import Connector
from bridge.routines.making import RoutineMaker
from bridge.routines.managing import RoutineManager
from bridge.routines.proposing import PlaceOf
from bridge.session_end import SessionEnd
from layers.episodic.episode import Hit
from layers.episodic.memory import EpisodicMemory
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place, Viewer
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore


class Where(enum.Enum):
    """How a command was typed."""

    # A Slack slash command: answered privately to the person who typed it.
    SLASH = "slash"
    # Text addressed to the agent in a Slack thread or DM (Slack delivers no slash
    # command from inside a thread): answered in the thread.
    THREAD = "thread"
    # A line of `thoth chat`.
    TERMINAL = "terminal"


@dataclass(frozen=True)
class Invocation:
    """One command typed: its words after the name, who typed it and where."""

    args: str
    user: str
    place: Place
    where: Where
    # What the person may read from here (recall's rule).
    viewer: Viewer
    # The open session this was typed in, or for a slash command the channel's latest
    # open one; None when there is none.
    session_key: str | None = None
    # The person's time zone (IANA), for dates in answers.
    zone: str | None = None

    @property
    def in_dm(self) -> bool:
        return self.place.channel_type == "im"


@dataclass(frozen=True)
class Reply:
    """What a command answers. ``text`` is plain (the transport escapes it for Slack)
    unless ``markdown`` says it is Slack Markdown already escaped."""

    text: str = ""
    # Episodes to show, laid out by the transport (Slack links them for a slash command).
    hits: Sequence[Hit] = ()
    markdown: bool = False
    # Said in the session's thread for everyone there, even for a slash command.
    in_thread: bool = False
    # Bad input: the terminal says it as an error (and exits 2 at the end).
    mistake: bool = False
    # The terminal chat ends after it.
    ends_chat: bool = False
    # Block Kit Slack shows in place of ``text`` (buttons: `/thoth routines`); the
    # terminal shows ``text`` and ignores them.
    blocks: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class CommandServices:
    """What commands use of the app, built once in the composition root."""

    sessions: Offloaded[SessionStore]
    transcript: Offloaded[TranscriptStore]
    session_end: SessionEnd
    tokens: Offloaded[McpTokens]
    recall_top_k: int
    episodic: Offloaded[EpisodicMemory]
    # Waits for the turns' background writes (the last turn's episode).
    drain: Callable[[], Awaitable[int]] | None = None
    # People's own accounts on the team's remote servers (None: no server takes one).
    connector: Connector | None = None
    # Routines (`/thoth routine add`, `/thoth routines`): made, changed, and the channel a
    # command names as a place (None where routines are not made).
    routines: RoutineMaker | None = None
    routine_manager: RoutineManager | None = None
    routine_place: PlaceOf | None = None


Handler = Callable[[Invocation, CommandServices], Awaitable[Reply]]


@dataclass(frozen=True)
class Command:
    """One command: its name, what it says of itself, who may run it and its handler."""

    name: str
    # One line of help (the manifest's description for a slash command).
    help: str
    handler: Handler
    # What follows the name: as Slack's usage hint shows it, and as the chat names it.
    usage_hint: str = ""
    arguments: str = ""
    # A Slack slash command (listed in manifest.yml), and what Slack shows at once.
    slash: bool = True
    ack: str | None = None
    # The text form addressed to the agent in a thread ("done", "recall X"): the match's
    # ``args`` group (if any) is the command's words.
    in_thread: re.Pattern[str] | None = None
    terminal: bool = False
    # Who may run it: only in a DM with Thoth (a secret is no channel's business).
    only_in_a_dm: bool = False
    refused_outside_a_dm: str = ""

    @property
    def slash_name(self) -> str:
        return f"/{self.name}"


async def run(command: Command, invocation: Invocation, services: CommandServices) -> Reply:
    """The command's reply, once who may run it is checked (in this one place)."""
    if command.only_in_a_dm and not invocation.in_dm:
        return Reply(command.refused_outside_a_dm)
    return await command.handler(invocation, services)
