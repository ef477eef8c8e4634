"""Who is at this terminal: the default speaker, proposer and approver of CLI commands."""

from __future__ import annotations

import getpass


def login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local-user"
