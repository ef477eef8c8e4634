"""Which workspace a Slack call is for: the one whose request is being served.

With one bot token (``SLACK_BOT_TOKEN``) every call carries it. Installed into many
workspaces (``installs/``), each call carries the token of the workspace whose event,
command or click is being served, and counts against that workspace's rate budget.
That workspace is set once where work for it starts (the Bolt middleware after Slack's
request is authorized, for that request alone; a delivery taken over from another
replica; a scheduled post) and travels with the work as a context variable: asyncio
copies it into every task the work starts, and the runner's ``submit`` copies it across
to the turns' loop. So the conversation, the directory, the reactions and every other
part keep one client and never pass a token around, and a part that forgets which
workspace it works for fails loudly (``NoWorkspace``) rather than speaking for another.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bridge.slack_api.rate_budget import BudgetedAsyncWebClient


@dataclass(frozen=True)
class Workspace:
    team_id: str | None
    enterprise_id: str | None
    bot_token: str = field(repr=False)
    bot_user_id: str | None = None


class NoWorkspace(RuntimeError):
    """A Slack call made outside the work of any workspace, with no token of its own."""


# The install that answers for a workspace, for work that starts outside a request (a
# scheduled post, a delivery taken over): None when that workspace uninstalled Thoth.
WorkspaceOf = Callable[[str], Awaitable[Workspace | None]]

_SERVED: ContextVar[Workspace | None] = ContextVar("slack_workspace", default=None)


def serve(workspace: Workspace | None) -> None:
    """From here on in this task (and the tasks it starts), calls are ``workspace``'s:
    for a Bolt middleware, whose request is scoped by ``serving`` around the dispatch."""
    _SERVED.set(workspace)


@contextmanager
def serving(workspace: Workspace | None) -> Iterator[None]:
    """Within the block (and every task started in it), Slack calls are ``workspace``'s."""
    token = _SERVED.set(workspace)
    try:
        yield
    finally:
        _SERVED.reset(token)


@asynccontextmanager
async def serving_team(workspace_of: WorkspaceOf | None, team: str) -> AsyncIterator[bool]:
    """Within, Slack calls are ``team``'s (with one bot token there is nothing to do);
    yields whether Slack may be asked for it at all (False: Thoth is not installed there)."""
    if workspace_of is None:
        yield True
        return
    workspace = await workspace_of(team)
    if workspace is None:
        yield False
        return
    with serving(workspace):
        yield True


def served() -> Workspace | None:
    """The workspace being served, if any (None with one bot token)."""
    return _SERVED.get()


class WorkspaceClient(BudgetedAsyncWebClient):
    """The SDK's async client whose token is the served workspace's (else its own)."""

    def call_token(self) -> str | None:
        workspace = _SERVED.get()
        return self.token if workspace is None else workspace.bot_token

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        workspace = _SERVED.get()
        if workspace is not None:
            headers = dict(kwargs.get("headers") or {})
            if not any(name.lower() == "authorization" for name in headers):
                headers["Authorization"] = f"Bearer {workspace.bot_token}"
            kwargs["headers"] = headers
        elif self.token is None:
            raise NoWorkspace(f"{api_method} was called outside any workspace's work, so no"
                              " workspace's token may carry it")
        return await super().api_call(api_method, **kwargs)


def bot_user(fixed: str | None) -> str | None:
    """Thoth's own user in the served workspace (each install has its own), else ``fixed``
    (the one bot token's)."""
    workspace = _SERVED.get()
    return fixed if workspace is None else workspace.bot_user_id
