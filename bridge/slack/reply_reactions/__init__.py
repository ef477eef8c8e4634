"""What an emoji reaction on one of Thoth's replies does: one object per reaction.

A reaction is its emoji names, whether only the person who asked may give it (the
exchange holds their words), and its handler, called when it is added or removed.
``bridge/slack/reactions.py`` routes each reaction on a reply to the one registered
under its name (``REPLY_REACTIONS`` there): a new reaction is its module here and a line
in that list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bridge.console_links import ConsoleLinks
from bridge.slack.replies import ReplyRecord
from bridge.slack.stores import SlackStores
from bridge.slack_api.directory import Directory
from layers.identity.protocol import IdentityBackend
from layers.shared.offloaded import Offloaded

# An ephemeral note to one person in a thread: (user, channel, thread_ts, text).
Tell = Callable[[str, str, "str | None", str], Awaitable[None]]


@dataclass(frozen=True)
class Kit:
    """What a reaction's handler may use."""

    stores: Offloaded[SlackStores]
    identity: IdentityBackend | None
    # Who may approve a skill draft or a memory note (FOUNDER_USER_IDS).
    founders: frozenset[str]
    client: AsyncWebClient
    directory: Directory
    tell: Tell
    # Where the console shows a memory (CONSOLE_URL), for links on cards.
    console: ConsoleLinks | None = None


def keep_effect(
    stores: SlackStores, reply: ReplyRecord, reaction: str, user: str, effect: str
) -> None:
    """What ``user``'s ``reaction`` did, kept so that removing it undoes that."""
    stores.effects.keep(reply.channel, reply.ts, reaction, user, effect)


def pop_effect(stores: SlackStores, reply: ReplyRecord, reaction: str, user: str) -> str | None:
    return stores.effects.pop(reply.channel, reply.ts, reaction, user)


@dataclass(frozen=True)
class Reacted:
    """One reaction added to (or removed from) a reply whose exchange is an episode."""

    reply: ReplyRecord
    episode_id: str
    name: str
    user: str
    added: bool


@dataclass(frozen=True)
class ReplyReaction:
    names: tuple[str, ...]
    # Saving, deleting or claiming an exchange is the asker's call: it may hold their
    # words from a DM or a private channel.
    asker_only: bool
    handle: Callable[[Reacted], Awaitable[None]]
    # Whether someone else who gives it is told that it is the asker's.
    says_it_is_the_askers: bool = True
