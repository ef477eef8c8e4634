"""A file as it arrived with a message: its name, what the sender said it is, and its
bytes (downloaded from Slack, or read from the terminal's disk)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedFile:
    name: str
    data: bytes
    # The type the sender's side gave it (Slack's ``mimetype``); the bytes decide.
    mimetype: str | None = None
    # Where people open it again (Slack's permalink); kept with the exchange.
    permalink: str | None = None
