"""What a person answered that a conversation waited on: a tool call on its card
(``tool_approvals.py``), or their own account connected (``connect_links.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.team_tools.asks import Ask


@dataclass(frozen=True)
class AnsweredCall:
    """The turn that goes on says ``words`` and tells the model ``outcome``."""

    ask: Ask
    words: str
    outcome: str
    reader_team: str | None = None
