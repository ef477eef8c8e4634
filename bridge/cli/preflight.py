"""What `thoth chat` and `thoth serve` check before they run any turn.

Decided: both refuse to start, in one line and before anything is written, when the
brain cannot take a commit (mid-merge, mid-rebase, a detached HEAD, not a
repository): a session's reflection could not save what it learnt, and the person
would not know until the learning was lost. Commands that never write the brain
(recall, export, people) run as usual; `thoth doctor` names the problem. (A damaged
database is refused by every command, when it is opened: ``Database.open``.)
"""

from __future__ import annotations

from bridge.app import Thoth
from layers.errors import ConfigurationError


def check_ready_for_turns(app: Thoth) -> None:
    if app.brain_problem:
        raise ConfigurationError(app.brain_problem)
