"""The audit log: every change people make to what Thoth keeps, append-only."""


def slack_actor(user: str) -> str:
    """A Slack user as the audit log names them."""
    return f"slack:{user}"
