"""One rate budget per Slack workspace and method, shared by every conversation of the
process.

Slack's limits are per app, per workspace, per method (chat.postMessage per channel),
and it counts a call made while a ``Retry-After`` it gave is still running against the
app, up to disabling it. So the wait a 429 names is kept here, not in the call that got
it: until it is over no call of that method (for that channel, for chat.postMessage)
leaves this process, whichever conversation makes it; after it, the calls that waited go
one at a time at the method's pace for a minute (``TIER_PER_MINUTE``), not all at once.
A reply's progress updates do not queue behind the wait either: ``SlackSink`` skips them
while their method is held or paced, so the text gathers and the next update carries
all of it (the final answer always waits its turn and goes).

Replicas on PostgreSQL share each wait (``rate_waits_across_replicas.py``): a replica told to wait
says so once over LISTEN/NOTIFY, and every other one holds the method too. Nothing is
read from the database before a call: the holds arrive as they happen, so a call costs
no round trip, and a 429 costs one NOTIFY.

Why a subclass of the SDK's client and of its rate-limit retry handler, not a wrapper
around each call: every call of the serving process goes through ``api_call``, and the
SDK's own retry of a 429 goes through its retry handler, so both see the one budget.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bridge.slack_api.slack_health import SlackHealth

# The tier of each method Thoth calls (Slack's method reference: Tier 2 about 20 a
# minute, Tier 3 50, Tier 4 100, each with bursts; "special" methods their own).
METHOD_TIERS: Mapping[str, str] = {
    "chat.postMessage": "special: about one a second per channel",
    "chat.update": "Tier 3",
    "chat.delete": "Tier 3",
    "chat.postEphemeral": "Tier 4",
    "chat.getPermalink": "Tier 4",
    "chat.startStream": "Tier 2",
    "chat.appendStream": "Tier 4",
    "chat.stopStream": "Tier 2",
    "assistant.threads.setStatus": "Tier 4",
    "assistant.threads.setTitle": "Tier 4",
    "assistant.threads.setSuggestedPrompts": "Tier 4",
    "reactions.add": "Tier 3",
    "reactions.remove": "Tier 3",
    "conversations.info": "Tier 3",
    "conversations.members": "Tier 4",
    "conversations.replies": "Tier 3",
    "conversations.history": "Tier 3",
    "conversations.open": "Tier 3",
    "users.info": "Tier 4",
    "users.conversations": "Tier 3",
    "views.publish": "Tier 4",
    "auth.test": "Tier 4",
}
# Methods whose limit is per channel rather than per workspace.
PER_CHANNEL = frozenset({"chat.postMessage"})
# Calls a minute each tier allows (one a second for chat.postMessage, per channel): the
# pace of a method's calls once Slack has answered it 429, so that the calls waiting out
# the Retry-After do not all go the moment it ends, each to be refused again but the
# first. An unlisted method is paced as Tier 3.
TIER_PER_MINUTE: Mapping[str, float] = {"Tier 2": 20, "Tier 3": 50, "Tier 4": 100}
PER_CHANNEL_PER_MINUTE = 60.0
# How long after a 429 a method's calls keep that pace (Slack's windows are a minute).
PACED_FOR_S = 60.0
# Over each paced interval: the loopback's and Slack's buckets refill at the tier's rate
# exactly, and a call may reach Slack a moment before its slot.
PACE_MARGIN_S = 0.05
# When Slack's 429 names no wait (it always does; just in case).
DEFAULT_WAIT_S = 1.0
# Over each Retry-After: calls of other conversations already on their way get 429s of
# their own a moment later, whose waits end a moment later too, and a loaded loop may
# read those answers late. Seen on the loopback under load: up to about 30 ms.
MARGIN_S = 0.25

# How long a reply keeps trying to reach a failing Slack, unless the settings say
# (``SLACK_DELIVERY_WINDOW_S``).
DELIVERY_WINDOW_S = 180.0

BudgetKey = tuple[str, str]


# Told of each hold a 429 starts here, to share it with the other replicas
# (``rate_waits_across_replicas.py``): the budget's name, the key, the seconds.
HoldSharer = Callable[[str, BudgetKey, float], None]
_sharer: list[HoldSharer] = []


def share_holds_with(sharer: HoldSharer | None) -> None:
    """Every hold a 429 starts in this process goes to ``sharer`` too (None: no more)."""
    _sharer[:] = [] if sharer is None else [sharer]


class RateBudget:
    """When each method may be called again, for one workspace."""

    def __init__(self, *, name: str = "", clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self.name = name
        self._clock = clock
        self._held_until: dict[BudgetKey, float] = {}
        self._paced_until: dict[BudgetKey, float] = {}
        self._next_slot: dict[BudgetKey, float] = {}
        # The other replicas that shared a wait of each key, and until when they pace.
        self._others: dict[BudgetKey, dict[str, float]] = {}

    def hold(self, key: BudgetKey, seconds: float, *, told_by: str | None = None) -> None:
        """Hold ``key`` for ``seconds``: a 429 of this process's (told to the other
        replicas), or one another replica (``told_by``) was given. Each replica heard from
        in the paced minute slows this one's pace as much again: together they keep the
        method's pace, not a multiple of it."""
        if told_by is None and _sharer:
            _sharer[0](self.name, key, seconds)
        until = self._clock() + seconds
        if until > self._held_until.get(key, 0.0):
            self._held_until[key] = until
        self._paced_until[key] = self._held_until[key] + PACED_FOR_S
        self._next_slot[key] = max(self._next_slot.get(key, 0.0), self._held_until[key])
        if told_by is not None:
            self._others.setdefault(key, {})[told_by] = self._paced_until[key]

    def held_for(self, key: BudgetKey) -> float:
        """How long calls of ``key`` must still wait out Slack's Retry-After (0: over)."""
        return max(0.0, self._held_until.get(key, 0.0) - self._clock())

    def paced(self, key: BudgetKey) -> bool:
        """Whether ``key`` is waiting out a 429 (here, or on another replica) or within
        the paced minute after it: its calls go at the tier's pace, not in bursts."""
        return self._clock() < self._paced_until.get(key, 0.0)

    def delay_for(self, key: BudgetKey) -> float:
        """How long a call of ``key`` made now would wait: the hold, then its paced slot."""
        now = self._clock()
        held = self.held_for(key)
        if held > 0 or now >= self._paced_until.get(key, 0.0):
            return held
        return max(0.0, self._next_slot.get(key, 0.0) - now)

    async def wait_turn(self, key: BudgetKey) -> None:
        while True:
            # A loop: another 429 during the wait pushes it further.
            if (left := self.held_for(key)) > 0:
                await asyncio.sleep(left)
                continue
            now = self._clock()
            if now >= self._paced_until.get(key, 0.0):
                return
            # After a 429: one call per slot, at the method's pace, in the order they came.
            slot = max(now, self._next_slot.get(key, 0.0))
            pacing = 1 + sum(1 for until in self._others.get(key, {}).values() if until > now)
            self._next_slot[key] = slot + pacing * 60.0 / per_minute(key) + PACE_MARGIN_S
            if slot > now:
                await asyncio.sleep(slot - now)
            if self.held_for(key) == 0:
                return


def per_minute(key: BudgetKey) -> float:
    method, channel = key
    if channel:
        return PER_CHANNEL_PER_MINUTE
    return TIER_PER_MINUTE.get(METHOD_TIERS.get(method, "Tier 3"), TIER_PER_MINUTE["Tier 3"])


def budget_key(method: str, args: Mapping[str, Any] | None) -> BudgetKey:
    channel = str((args or {}).get("channel") or "") if method in PER_CHANNEL else ""
    return method, channel


_BUDGETS: dict[str, RateBudget] = {}


def budget_for(api_url: str, token: str) -> RateBudget:
    """The process's budget for the workspace a bot token is for (one token, one
    workspace) at one Slack: every client built for it shares it."""
    # Keyed by a hash: no token kept in a long-lived map for a heap dump to show.
    return named_budget(hashlib.sha256(f"{api_url}\n{token}".encode()).hexdigest())


def named_budget(name: str) -> RateBudget:
    """The budget ``budget_for`` names so (another replica's hold names it)."""
    found = _BUDGETS.get(name)
    if found is None:
        found = _BUDGETS.setdefault(name, RateBudget(name=name))
    return found


# The budget and key of the call in flight in this task, for the SDK's retry handler.
_CALLING: ContextVar[tuple[RateBudget, BudgetKey] | None] = ContextVar(
    "slack_call_budget", default=None)


class BudgetedAsyncWebClient(AsyncWebClient):
    """The SDK's async client, each call first waiting out its method's hold in the
    budget of the workspace whose token the call carries.

    Each call's outcome goes to ``health`` too (set by ``clients.py``): a 5xx, a reset or
    a timeout says Slack is failing, any answer of Slack's (even a refusal) that it works.
    """

    # Set where the client is built (``clients.build_async_web_client``).
    health: SlackHealth | None = None
    # How long a reply keeps trying to reach a failing Slack (``sure_posts.py``).
    delivery_window_s: float = DELIVERY_WINDOW_S

    def call_token(self) -> str | None:
        """The token the next call carries (``workspace_client.py``: per workspace)."""
        return self.token

    @property
    def budget(self) -> RateBudget:
        return budget_for(self.base_url, self.call_token() or "")

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        args = kwargs.get("json") or kwargs.get("data") or kwargs.get("params")
        budget = self.budget
        key = budget_key(api_method, args if isinstance(args, dict) else None)
        await budget.wait_turn(key)
        calling = _CALLING.set((budget, key))
        try:
            response = await super().api_call(api_method, **kwargs)
        except SlackApiError as error:
            status = http_status(error)
            # The 429 the retry handler had no try left for: its wait holds all the same,
            # or the caller's own next try would go before it is over.
            if status == 429:
                budget.hold(key, _seconds(_header(error.response.headers, "retry-after"))
                            + MARGIN_S)
            if status >= 500:
                self._failing(api_method, f"{api_method} answered HTTP {status}")
            else:
                self._working(api_method)
            raise
        except (OSError, aiohttp.ClientError) as error:  # a timeout is an OSError
            self._failing(api_method, f"{api_method}: {type(error).__name__} {error}".strip())
            raise
        finally:
            _CALLING.reset(calling)
        self._working(api_method)
        return response

    def _failing(self, method: str, why: str) -> None:
        if self.health is not None:
            self.health.failed(method, why)

    def _working(self, method: str) -> None:
        if self.health is not None:
            self.health.answered(method)


class SharedRateLimitRetryHandler(AsyncRateLimitErrorRetryHandler):
    """The SDK's retry of a 429, whose wait is the whole workspace's for that method: the
    workspace whose token the refused request carried."""

    def __init__(self, api_url: str, *, max_retry_count: int) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self._api_url = api_url

    async def prepare_for_next_attempt_async(
        self, *, state: RetryState, request: HttpRequest,
        response: HttpResponse | None = None, error: Exception | None = None,
    ) -> None:
        if response is None:
            raise error or RuntimeError("a 429 retry with no response")
        state.next_attempt_requested = True
        # The call's own budget and key, as the client named them: the SDK's retry request
        # carries no JSON body, so chat.postMessage's channel is not in it.
        budget, key = _CALLING.get() or (
            budget_for(self._api_url, _bearer(request)),
            budget_key(request.url.rstrip("/").rsplit("/", 1)[-1], _arguments(request)))
        budget.hold(key, _retry_after(response) + MARGIN_S)
        await budget.wait_turn(key)
        state.increment_current_attempt()


def http_status(error: SlackApiError) -> int:
    """The HTTP status of Slack's answer (a 5xx whose body was not JSON leaves the SDK
    holding aiohttp's response, whose field is ``status``)."""
    response: Any = error.response
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    return int(status) if isinstance(status, int) else 200


def _bearer(request: HttpRequest) -> str:
    value = _header(request.headers, "authorization") or ""
    return value[len("Bearer "):] if value.startswith("Bearer ") else ""


def _retry_after(response: HttpResponse) -> float:
    return _seconds(_header(response.headers, "retry-after"))


def _header(headers: Mapping[str, Any], wanted: str) -> str | None:
    for name, value in headers.items():
        if name.lower() == wanted:
            return value if isinstance(value, str) else (value[0] if value else None)
    return None


def _seconds(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value is not None else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


def _arguments(request: HttpRequest) -> Mapping[str, Any] | None:
    if request.body_params:
        return request.body_params
    if request.data:
        try:
            parsed = json.loads(request.data)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None
