"""A transport-neutral turn: one human message, where it was said and by whom."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bridge.files.reading import Read, Unread
from layers.episodic.episode import MAX_TEXT_CHARS
from layers.identity.known_as import known_as
from layers.identity.protocol import Person
from layers.shared.errors import BadInput
from layers.shared.places import Place, Viewer


@dataclass(frozen=True)
class Turn:
    """What every transport (Slack, terminal) turns its input into."""

    session_key: str
    text: str
    place: Place
    user: str | None = None
    user_name: str | None = None
    # The speaker's time zone (an IANA name, as Slack gives it): a date they name is a
    # day there. None: UTC.
    zone: str | None = None
    received_at: float = field(default_factory=time.time)
    # The transport's delivery id (Slack's event_id), for logs and deduplication.
    event_id: str | None = None
    # In a DM, the channel the person is looking at beside it (Slack's AI-app pane):
    # recall may show that channel's memories to them, as they can read it.
    looking_at: str | None = None
    # The speaker sees only this channel's own memory (``Viewer.confined``).
    confined: bool = False
    # The speaker's Enterprise Grid org, when Slack says: they are known under its key too.
    org: str | None = None
    # The files shared with the message, read (or said why not) by the transport.
    files: tuple[Read | Unread, ...] = ()
    # How this transport asks the speaker to allow a tool that may change something
    # (``tools/approvals.py``'s ``Approvals``); None: no one can be asked.
    approvals: object | None = field(default=None, compare=False)
    # What a person decided about a tool call this conversation asked for, and what it
    # answered: a turn that goes on after the answer (Slack's approval card).
    answered_call: str | None = None

    @property
    def person(self) -> Person | None:
        """The speaker in the identity layer's terms (None for an anonymous turn)."""
        return Person(self.place.team, self.user, self.user_name) if self.user else None

    def known_as(self) -> list[Person]:
        """Every key the speaker is known under (``identity.protocol.known_as``)."""
        return [] if self.person is None else known_as(self.person, self.org)

    @property
    def viewer(self) -> Viewer:
        """Whose eyes recall must respect: this speaker, in this channel.

        A DM viewer sees the speaker's own DMs, so its channel field is free to name the
        channel they are looking at (the visibility rule matches private channels by it).
        """
        return viewer_at(self.place, self.user, self.looking_at, confined=self.confined)


def viewer_at(
    place: Place, user: str | None, looking_at: str | None = None, *, confined: bool = False
) -> Viewer:
    """The viewer of someone at ``place``; in a DM, the channel they look at beside it
    (never for a confined reader, who sees only where they are)."""
    channel = place.channel
    if place.channel_type == "im" and looking_at and not confined:
        channel = looking_at
    return Viewer(place.team, channel, place.channel_type, user, confined=confined)


def words_or_files(text: str, file_names: str) -> str:
    """What a message says: its words, or, for files shared without a word, which files
    (a message is never empty, and its episode's words name what was shared)."""
    return text if text.strip() or not file_names else f"[shared {file_names}]"


def check_message(text: str) -> None:
    """Refuse what no transport may pass on: an empty or over-long message."""
    if not text.strip():
        raise BadInput("the message is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        # Bytes that are not UTF-8 arrive as lone surrogates (Python's surrogateescape).
        raise BadInput(
            f"the message is not valid UTF-8 (at character {error.start + 1}); send it as UTF-8"
        ) from error
    if len(text) > MAX_TEXT_CHARS:
        raise BadInput(
            f"the message is {len(text)} characters; the limit is {MAX_TEXT_CHARS}"
            " (Slack's own message limit)"
        )
