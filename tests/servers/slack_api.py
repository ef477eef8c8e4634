"""A loopback server that speaks the Slack Web API, for the real ``slack_sdk`` ``WebClient``.

Point ``WebClient(token="xoxb-...", base_url=server.url)`` at it. Requests are parsed
whatever their encoding: JSON bodies (what ``chat_postMessage`` and the streaming methods
send), ``application/x-www-form-urlencoded`` forms (``params=``/``data=``, where
structured fields such as ``blocks`` arrive as JSON text), multipart forms and query
strings. Every request is recorded whole (HTTP verb, API method, headers, parsed
arguments, raw body, encoding).

State lives in memory: messages per channel (with threads and reactions), ephemeral
messages, streams, assistant statuses, and the users and channels the test adds. Answers
are shaped like Slack's: HTTP 200 with ``{"ok": true, ...}`` or ``{"ok": false, "error":
...}``. Faults are scripted with ``fail_next`` (429 with ``Retry-After``, 5xx, or a Slack
error at HTTP 200) and ``delay_next``; the ways Slack fails when it is unwell with
``fail_after_applying`` (did it, then answered 5xx), ``reset_next`` (the connection reset
without an answer, before or after doing it) and ``down_for`` (a standing window: every
call of the methods named answers 5xx, resets or hangs for so many seconds).
``conversations.replies`` and ``.history`` show a message's ``metadata`` only when asked
with ``include_all_metadata``, as Slack's method reference says.

Refusals follow Slack's method reference (``slack_rules.py``): content limits
(``text`` 40 000, ``markdown_text`` 12 000, 50 blocks, section text 3 000), who may
post where (``channel_not_found`` for channels the test never added or private ones the
bot is not in, ``not_in_channel`` for public ones; a user id as the channel opens a DM),
recipients required when streaming outside a DM, a stream ended by the person's Stop
(``stop_stream_by_user``) or by the app, and the rate-limit tiers, answered with 429 and
``Retry-After``. Reading a conversation (``conversations.replies``/``.history``) needs the
history scope of its type in ``scopes`` (else ``missing_scope`` with ``needed`` and
``provided``) and the bot in it; ``conversations.replies`` honours ``oldest``/``latest``/
``inclusive`` and pages with ``limit`` and an opaque cursor. Leniency left, on purpose:
replies may name a parent the fake never saw, and reactions and permalinks work on any
``ts`` of a known channel (an app reacts to messages that reached it as events).
``add_message`` seeds such messages when a test wants them listed by
``conversations.replies``; a thread whose parent was never seeded is listed without it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import email.parser
import email.policy
import itertools
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from tests.servers.loopback import LoopbackHandler, LoopbackServer
from tests.servers.slack_rules import (
    CONVERSATION_TYPES,
    HISTORY_SCOPES,
    MAX_LOADING_MESSAGES,
    MAX_MARKDOWN_CHARS,
    MAX_SUGGESTED_PROMPTS,
    MAX_TEXT_CHARS,
    MAX_UPDATE_TEXT_CHARS,
    READ_SCOPES,
    RateLimits,
    SlackError,
    check_blocks,
    check_chunks,
    check_message_content,
    check_scope,
)

if TYPE_CHECKING:
    from tests.servers.slack_install import AppInstalls
    from tests.servers.slack_sign_in import SignInWithSlack

# The browser's step of Sign in with Slack (on slack.com, not under /api/).
AUTHORIZE_PATH = "/openid/connect/authorize"
# Where a shared file's bytes are served (``url_private_download``), outside /api/.
FILES_PATH = "/files-pri/"
# What Slack answers a file download without a token that may read it: its sign-in page.
SIGN_IN_PAGE = (b"<!DOCTYPE html><html><head><title>Slack</title></head><body>"
                b"<h1>Sign in to your workspace</h1></body></html>")
# The browser's step of installing the app through OAuth v2 (``slack_install.py``).
INSTALL_AUTHORIZE_PATH = "/oauth/v2/authorize"
# Fields Slack takes as JSON; in a form they arrive as JSON text.
STRUCTURED_FIELDS = frozenset({
    "blocks", "attachments", "metadata", "chunks", "loading_messages", "unfurls",
    "user_auth_blocks", "prompts",
})
ERRORS_BY_STATUS = {
    200: "fatal_error",
    429: "ratelimited",
    500: "fatal_error",
    503: "service_unavailable",
}
APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
RESPONSE_URL_PATH = "/commands/"
# openid.connect.token: the app authenticates itself (client id and secret), no token.
NO_AUTH_METHODS = frozenset({"api.test", "openid.connect.token", "oauth.v2.access"})
# Sign in with Slack's user token (``bridge/slack_api/sign_in_with_slack.py``).
USER_TOKEN_METHODS = frozenset({"openid.connect.userInfo"})


@dataclass(frozen=True)
class RecordedCall:
    """One request as it reached the server."""

    http_method: str  # "POST" or "GET"
    method: str  # the Slack API method, e.g. "chat.postMessage"
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    args: dict[str, Any]  # query string and body merged, values as sent (form values are text)
    encoding: str  # "json", "form", "multipart", "none" (no body) or "invalid" (bad JSON)
    body_text: str
    received_at: float

    @property
    def token(self) -> str | None:
        auth = self.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer "):].strip() or None
        if self.encoding != "json":  # Slack reads a token field only from forms and queries
            token = self.args.get("token")
            return token if isinstance(token, str) and token else None
        return None

    def field(self, name: str) -> Any:
        """The argument, with JSON text decoded for the fields Slack takes as JSON."""
        value = self.args.get(name)
        if name in STRUCTURED_FIELDS and isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return value
        return value


@dataclass
class _Fault:
    kind: str  # "fail", "delay" or "reset" (the connection closed, no answer)
    method: str | None  # None: any method
    remaining: float
    status: int = 429
    error: str | None = None
    retry_after: int | None = 1
    seconds: float = 0.0
    applied: bool = False  # the call is done before the failure is answered
    methods: frozenset[str] | None = None  # a window's methods (None: ``method``)
    until: float | None = None  # a standing window's end (time.monotonic)
    since: float = 0.0  # a standing window's beginning

    def applies_to(self, call: RecordedCall) -> bool:
        if self.methods is not None:
            return call.method in self.methods
        return self.method in (None, "*", call.method)


@dataclass
class _Stream:
    channel: str
    ts: str
    state: str = "in_progress"  # then "stopped"
    chunks: list[Any] = field(default_factory=list)


_ApiMethod = Callable[["FakeSlack", RecordedCall], dict[str, Any]]
_METHODS: dict[str, _ApiMethod] = {}


def api(name: str) -> Callable[[_ApiMethod], _ApiMethod]:
    def register(function: _ApiMethod) -> _ApiMethod:
        _METHODS[name] = function
        return function

    return register


def _text(call: RecordedCall, name: str, missing: str | None = None) -> str | None:
    value = call.args.get(name)
    if value is None or value == "":
        if missing is not None:
            raise SlackError(missing)
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _structured(call: RecordedCall, name: str, invalid: str = "invalid_arguments") -> Any:
    value = call.field(name)
    if isinstance(value, str):  # JSON text that did not parse
        raise SlackError(invalid)
    return value


def _chunk_text(chunks: Any) -> str:
    if not isinstance(chunks, list):
        return ""
    return "".join(
        str(c.get("text", "")) for c in chunks
        if isinstance(c, dict) and c.get("type") == "markdown_text"
    )


def _ts_key(ts: str) -> float:
    return float(ts)


class FakeSlack(LoopbackServer):
    url_path = "/api/"

    """The server; use as a context manager and pass ``url`` as ``WebClient(base_url=...)``.

    ``bot_token``/``app_token``, when given, pin the exact tokens (others: ``invalid_auth``);
    otherwise any ``xoxb-`` token (``xapp-`` for ``apps.connections.open``) is accepted.
    ``scopes`` are the bot token's, comma-separated (sent as ``x-oauth-scopes``, checked by
    the methods that need one); a test may assign it to take a scope away mid-run.
    """

    def __init__(
        self,
        *,
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        bot_name: str = "thoth",
        team_id: str = "T1",
        team: str = "Test Team",
        team_domain: str = "test",
        app_id: str = "A1",
        bot_token: str | None = None,
        app_token: str | None = None,
        scopes: str = (
            "chat:write,reactions:write,users:read,"
            "channels:history,groups:history,im:history,mpim:history,"
            "channels:read,groups:read,im:read,mpim:read"
        ),
        rate_limits: bool = True,
    ) -> None:
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.team_id = team_id
        self.team = team
        self.team_domain = team_domain
        self.app_id = app_id
        self.bot_token = bot_token
        self.app_token = app_token
        self.scopes = scopes
        self.socket_url = f"wss://{team_domain}.invalid/link/?ticket=fake&app_id={app_id}"
        self.requests: list[RecordedCall] = []
        self._users: dict[str, dict[str, Any]] = {}
        self._channels: dict[str, dict[str, Any]] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        # Files shared, by id: their object and their bytes (``add_file``).
        self._files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self._ephemerals: dict[str, list[dict[str, Any]]] = {}
        self._reactions: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._statuses: list[dict[str, Any]] = []
        self._faults: list[_Fault] = []
        self._titles: list[dict[str, Any]] = []
        self._responses: list[dict[str, Any]] = []
        self._prompts: list[dict[str, Any]] = []
        self._rate_limits = RateLimits() if rate_limits else None
        # Sign in with Slack, once a test sets it up (``slack_sign_in.SignInWithSlack``).
        self.sign_in: SignInWithSlack | None = None
        # Installed into workspaces through OAuth, once a test sets it up: each token
        # then belongs to its workspace (``slack_install.AppInstalls``).
        self.installs: AppInstalls | None = None
        # The app's Home tab (manifest ``features.app_home.home_tab_enabled``), and the
        # view published to each person's.
        self.home_tab_enabled = True
        self._homes: dict[str, dict[str, Any]] = {}
        self._lock = threading.Condition()
        self._epoch = int(time.time())
        self._ticks = itertools.count(1)
        self._ids = itertools.count(1)
        self.add_user(bot_user_id, bot_name, is_bot=True)
        self._serve(self._handler_class())

    # -- set-up ---------------------------------------------------------------------

    def add_user(
        self,
        user_id: str,
        name: str,
        *,
        real_name: str | None = None,
        display_name: str | None = None,
        is_bot: bool = False,
        **extra: Any,
    ) -> None:
        real = real_name if real_name is not None else name
        shown = display_name if display_name is not None else name
        with self._lock:
            self._users[user_id] = {
                "id": user_id, "team_id": self.team_id, "name": name, "deleted": False,
                "real_name": real, "is_bot": is_bot, "is_app_user": False,
                "tz": "Europe/London", "tz_offset": 0,
                "profile": {"display_name": shown, "real_name": real,
                            "display_name_normalized": shown, "real_name_normalized": real},
                **extra,
            }

    def add_channel(
        self, channel_id: str, name: str, kind: str = "channel", **extra: Any
    ) -> None:
        """``kind``: "channel" (public), "private", "im" or "mpim".

        Pass ``is_member=False`` for a channel the bot is not in, and ``members=[...]``
        to limit who is in it (by default everyone is).
        """
        if kind not in ("channel", "private", "im", "mpim"):
            raise ValueError(f"unknown channel kind {kind!r}")
        with self._lock:
            self._channels[channel_id] = {
                "id": channel_id, "name": name, "created": self._epoch,
                "is_channel": kind == "channel", "is_group": kind == "private",
                "is_im": kind == "im", "is_mpim": kind == "mpim",
                "is_private": kind != "channel", "is_archived": False,
                "is_member": True, "context_team_id": self.team_id,
                **extra,
            }

    def add_message(
        self,
        channel: str,
        text: str,
        *,
        user: str = "U1",
        thread_ts: str | None = None,
        ts: str | None = None,
        **extra: Any,
    ) -> str:
        """Store a message as if someone had posted it; returns its ``ts``."""
        with self._lock:
            message = {"type": "message", "user": user, "text": text, "team": self.team_id,
                       "ts": ts or self._next_ts(), **extra}
            self._store(channel, message, thread_ts)
            return str(message["ts"])

    def add_file(self, file_id: str, name: str, data: bytes, *,
                 mimetype: str = "application/octet-stream", user: str = "U1",
                 **extra: Any) -> dict[str, Any]:
        """A file someone shared: its object as messages and ``files.info`` carry it,
        with a ``url_private_download`` on this server that needs the bearer token."""
        host = self.url.removesuffix(self.url_path)  # files are not under /api/
        with self._lock:
            info = {"id": file_id, "name": name, "title": name, "mimetype": mimetype,
                    "filetype": name.rsplit(".", 1)[-1] if "." in name else "binary",
                    "size": len(data), "user": user, "mode": "hosted",
                    "url_private": f"{host}{FILES_PATH}{self.team_id}-{file_id}/{name}",
                    "url_private_download":
                        f"{host}{FILES_PATH}{self.team_id}-{file_id}/download/{name}",
                    "permalink": f"https://{self.team_domain}.slack.com/files/{user}/"
                                 f"{file_id}/{name}", **extra}
            self._files[file_id] = (info, data)
            return dict(info)

    # -- faults ---------------------------------------------------------------------

    @property
    def rate_limits(self) -> RateLimits:
        """Slack's limits as this fake keeps them (a test may bring them down)."""
        assert self._rate_limits is not None, "this FakeSlack was made without rate limits"
        return self._rate_limits

    def fail_next(
        self,
        method: str | None,
        status: int = 429,
        count: int = 1,
        retry_after: int | None = 1,
        *,
        error: str | None = None,
    ) -> None:
        """Answer the next ``count`` calls of ``method`` (None: any) with ``status``.

        429 comes with ``Retry-After: retry_after`` (whole seconds, as Slack sends and as
        the SDK's handler parses) and ``ratelimited``; 500 with ``fatal_error``; 503 with
        ``service_unavailable``; status 200 gives an ``ok: false`` answer with ``error``.
        """
        with self._lock:
            self._faults.append(_Fault("fail", method, count, status=status, error=error,
                                       retry_after=retry_after))

    def delay_next(self, method: str | None, seconds: float, count: int = 1) -> None:
        """Hold the next ``count`` calls of ``method`` (None: any) before answering."""
        with self._lock:
            self._faults.append(_Fault("delay", method, count, seconds=seconds))

    def fail_after_applying(self, method: str | None, status: int = 500,
                            count: int = 1) -> None:
        """Do the next ``count`` calls of ``method``, then answer them ``status`` (a 5xx
        Slack sends after it made the message: the client cannot tell it from one that
        made nothing)."""
        with self._lock:
            self._faults.append(_Fault("fail", method, count, status=status, applied=True))

    def reset_next(self, method: str | None, count: int = 1, *, applied: bool = False) -> None:
        """Reset the connection of the next ``count`` calls of ``method`` without an
        answer; with ``applied``, after doing them."""
        with self._lock:
            self._faults.append(_Fault("reset", method, count, applied=applied))

    def down_for(self, seconds: float, methods: frozenset[str] | set[str] | None = None, *,
                 how: str = "5xx", status: int = 503, applied: bool = False,
                 hang_s: float = 0.0, after_s: float = 0.0) -> None:
        """For ``seconds`` (beginning in ``after_s``), every call of ``methods`` (None:
        every method) fails: ``how`` is "5xx" (answered ``status``), "reset" (no answer)
        or "hang" (held ``hang_s``, longer than the client waits, then answered
        ``status``). With ``applied`` each call is done first, then fails."""
        since = time.monotonic() + after_s
        until = since + seconds
        named = frozenset(methods) if methods is not None else frozenset(_METHODS)
        kind = {"5xx": "fail", "reset": "reset", "hang": "fail"}[how]
        with self._lock:
            self._faults.append(_Fault(kind, None, float("inf"), status=status,
                                       applied=applied, methods=named, until=until,
                                       since=since,
                                       seconds=hang_s if how == "hang" else 0.0))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    # -- inspection -----------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[RecordedCall]:
        with self._lock:
            return [c for c in self.requests if method is None or c.method == method]

    def wait_for_call(
        self, method: str | None, count: int = 1, timeout_s: float = 10.0
    ) -> list[RecordedCall]:
        """Block until ``count`` calls of ``method`` (None: any) arrived; returns them."""
        with self._lock:
            def arrived() -> list[RecordedCall]:
                return [c for c in self.requests if method is None or c.method == method]

            if not self._lock.wait_for(lambda: len(arrived()) >= count, timeout_s):
                raise AssertionError(
                    f"expected {count} calls of {method}, got {len(arrived())}: "
                    f"{[c.method for c in self.requests]}"
                )
            return arrived()

    def messages(self, channel: str, thread_ts: str | None = None) -> list[dict[str, Any]]:
        """The stored messages of ``channel`` in ``ts`` order; with ``thread_ts``, that
        thread only (its parent, if stored, then the replies)."""
        with self._lock:
            found = self._messages.get(channel, [])
            if thread_ts is not None:
                found = [m for m in found
                         if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts]
            return [self._visible(channel, m) for m in found]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._find(channel, ts)
            return None if found is None else self._visible(channel, found)

    def ephemerals(self, channel: str) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._ephemerals.get(channel, []))

    def reactions_on(self, channel: str, ts: str) -> list[str]:
        with self._lock:
            return [r["name"] for r in self._reactions.get((channel, ts), [])]

    def statuses(self) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._statuses)

    def titles(self) -> list[dict[str, Any]]:
        """Every ``assistant.threads.setTitle`` taken: channel_id, thread_ts, title."""
        with self._lock:
            return copy.deepcopy(self._titles)

    def suggested_prompts(self) -> list[dict[str, Any]]:
        """Every ``assistant.threads.setSuggestedPrompts`` taken."""
        with self._lock:
            return copy.deepcopy(self._prompts)

    def response_url(self, name: str = "1") -> str:
        """A slash command's ``response_url``, answered here (Slack's hooks host in life)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{RESPONSE_URL_PATH}{self.team_id}/{name}"

    def responses(self) -> list[dict[str, Any]]:
        """What was posted to response URLs (JSON bodies), in order."""
        with self._lock:
            return copy.deepcopy(self._responses)

    def _responded(self, call: RecordedCall) -> None:
        with self._lock:
            self._responses.append(dict(call.args))
            self._lock.notify_all()

    def lapse_stream(self, channel: str, ts: str) -> None:
        """Slack ends a stream on its own (it lasts minutes at most): no Stop was pressed."""
        with self._lock:
            self._streams[(channel, ts)].state = "stopped"

    def stop_stream_by_user(self, channel: str, ts: str) -> None:
        """The person pressed Stop: Slack ends the stream and refuses what follows."""
        with self._lock:
            self._streams[(channel, ts)].state = "stopped_by_user"

    def stream(self, channel: str, ts: str) -> dict[str, Any] | None:
        """A stream's state ("in_progress"/"stopped") and every chunk it received."""
        with self._lock:
            found = self._streams.get((channel, ts))
            if found is None:
                return None
            return {"state": found.state, "chunks": copy.deepcopy(found.chunks)}

    # -- state (called with the lock held) ------------------------------------------

    def _next_ts(self) -> str:
        return f"{self._epoch}.{next(self._ticks):06d}"

    def _find(self, channel: str, ts: str | None) -> dict[str, Any] | None:
        return next((m for m in self._messages.get(channel, []) if m["ts"] == ts), None)

    def _visible(self, channel: str, message: dict[str, Any],
                 metadata: bool = True) -> dict[str, Any]:
        shown = copy.deepcopy(message)
        if not metadata:
            shown.pop("metadata", None)  # a reader must ask for it (include_all_metadata)
        reactions = self._reactions.get((channel, message["ts"]))
        if reactions:
            shown["reactions"] = copy.deepcopy(reactions)
        return shown

    def _store(self, channel: str, message: dict[str, Any], thread_ts: str | None) -> None:
        if thread_ts:
            message["thread_ts"] = thread_ts
            parent = self._find(channel, thread_ts)
            if parent is not None and parent is not message:
                message["parent_user_id"] = parent.get("user")
                parent["thread_ts"] = thread_ts
                parent["reply_count"] = parent.get("reply_count", 0) + 1
                users = parent.setdefault("reply_users", [])
                if message.get("user") not in users:
                    users.append(message.get("user"))
                parent["reply_users_count"] = len(users)
                parent["latest_reply"] = message["ts"]
        stored = self._messages.setdefault(channel, [])
        stored.append(message)
        stored.sort(key=lambda m: _ts_key(m["ts"]))

    def _bot(self, call: RecordedCall) -> tuple[str, str]:
        """The bot user and bot id the call's token is (each install has its own)."""
        installed = None if self.installs is None else self.installs.bots.get(call.token or "")
        if installed is not None:
            return installed.bot_user_id, installed.bot_id
        return self.bot_user_id, self.bot_id

    def _bot_message(self, call: RecordedCall, text: str, blocks: Any,
                     ts: str | None = None) -> dict[str, Any]:
        user, bot = self._bot(call)
        message: dict[str, Any] = {
            "type": "message", "user": user, "bot_id": bot,
            "app_id": self.app_id, "team": self.team_id, "text": text,
            "ts": ts or self._next_ts(),
            "bot_profile": {"id": bot, "app_id": self.app_id, "name": self.bot_name,
                            "team_id": self.team_id, "deleted": False},
        }
        if blocks is not None:
            message["blocks"] = blocks
        return message

    def _own_message(self, call: RecordedCall, refusal: str) -> tuple[str, dict[str, Any]]:
        channel = _text(call, "channel", "channel_not_found")
        assert channel is not None
        message = self._find(channel, _text(call, "ts", "message_not_found"))
        if message is None:
            raise SlackError("message_not_found")
        if message.get("bot_id") != self._bot(call)[1]:
            raise SlackError(refusal)
        return channel, message

    def _postable(self, call: RecordedCall, name: str = "channel") -> str:
        """The channel the call posts into, if the bot may post there (else Slack's refusal).

        A user id as the channel opens the DM with that person, as Slack does.
        """
        channel = str(_text(call, name, "channel_not_found"))
        if channel.startswith(("U", "W")):
            if channel not in self._users:
                raise SlackError("channel_not_found")
            return channel
        info = self._channels.get(channel)
        if info is None or not self._reaches(call, info):
            raise SlackError("channel_not_found")
        if not info.get("is_member", True):
            # A public channel the bot has not joined is visible but closed to it; any
            # other conversation it is not in does not exist as far as it can tell.
            raise SlackError("not_in_channel" if info.get("is_channel") else "channel_not_found")
        if info.get("is_archived"):
            raise SlackError("is_archived")
        return channel

    def _readable(self, call: RecordedCall) -> str:
        """The conversation whose messages the call reads, if the token may read them.

        Never added, or a private conversation the bot is not in: ``channel_not_found``.
        Then the history scope of its type (``missing_scope``), then membership: a public
        channel the bot is not in is ``not_in_channel`` (conversations.history: "Only user
        tokens can access public channels they are not in").
        """
        channel = str(_text(call, "channel", "channel_not_found"))
        info = self._channels.get(channel)
        if info is None or (not info.get("is_member", True) and not info.get("is_channel")) or (
                not self._reaches(call, info)):
            raise SlackError("channel_not_found")
        check_scope(HISTORY_SCOPES[_kind(info)], self.scopes)
        if not info.get("is_member", True):
            raise SlackError("not_in_channel")
        return channel

    def _reaches(self, call: RecordedCall, info: dict[str, Any]) -> bool:
        return self.installs is None or self.installs.reaches(call.token, info)

    def _is_dm(self, channel: str) -> bool:
        return channel.startswith(("U", "W")) or bool(self._channels.get(channel, {}).get("is_im"))

    def _open_stream(
        self, call: RecordedCall, *, stopping: bool = False
    ) -> tuple[_Stream, dict[str, Any]]:
        channel = _text(call, "channel", "channel_not_found")
        ts = _text(call, "ts", "invalid_arguments")
        stream = self._streams.get((str(channel), str(ts)))
        message = self._find(str(channel), ts)
        if stream is None or message is None:
            raise SlackError("message_not_found")
        if stream.state == "stopped_by_user" and not stopping:
            raise SlackError("stopped_by_user")
        if stream.state != "in_progress":
            raise SlackError("message_not_in_streaming_state")
        return stream, message

    def _append_to_stream(
        self, call: RecordedCall, stream: _Stream, message: dict[str, Any]
    ) -> None:
        chunks = _structured(call, "chunks", "invalid_chunks")
        check_chunks(chunks)
        markdown = _text(call, "markdown_text")
        if markdown is not None and chunks:
            raise SlackError("markdown_text_conflict")
        if markdown is not None and len(markdown) > MAX_MARKDOWN_CHARS:
            raise SlackError("msg_too_long")
        stream.chunks.extend(chunks or [])
        message["text"] += (markdown or "") + _chunk_text(chunks)

    # -- request handling -----------------------------------------------------------

    def _record(self, call: RecordedCall) -> tuple[_Fault | None, float]:
        """Record ``call``; return the failure it meets (if any) and how long to hold it."""
        with self._lock:
            self.requests.append(call)
            self._lock.notify_all()
            failure, delay = None, 0.0
            now = time.monotonic()
            for fault in list(self._faults):
                if fault.until is not None and now >= fault.until:
                    self._faults.remove(fault)
                    continue
                if not fault.applies_to(call) or now < fault.since:
                    continue
                if fault.kind == "delay" and not delay:
                    delay = fault.seconds
                elif fault.kind in ("fail", "reset") and failure is None:
                    failure = fault
                    delay = delay or fault.seconds  # a window that hangs, then fails
                else:
                    continue
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
            return failure, delay

    def _auth_error(self, call: RecordedCall) -> str | None:
        if call.method in NO_AUTH_METHODS or call.method not in _METHODS:
            return None
        token = call.token
        if token is None:
            return "not_authed"
        wants_app = call.method in APP_TOKEN_METHODS
        prefix, pinned = ("xapp-", self.app_token) if wants_app else ("xoxb-", self.bot_token)
        if call.method in USER_TOKEN_METHODS:
            prefix, pinned = "xoxp-", None
        if not token.startswith(("xoxb-", "xapp-", "xoxp-")):
            return "invalid_auth"
        if not token.startswith(prefix):
            return "not_allowed_token_type"
        if self.installs is not None and prefix == "xoxb-" and token != pinned:
            return self.installs.refusal(token)
        if pinned is not None and token != pinned:
            return "invalid_auth"
        return None

    def _respond(
        self, call: RecordedCall, failure: _Fault | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if failure is not None and failure.applied:
            self._respond(call, None)  # done, whatever is answered
        if failure is not None:
            error = failure.error or ERRORS_BY_STATUS.get(failure.status, "fatal_error")
            headers = {}
            if failure.status == 429 and failure.retry_after is not None:
                headers["Retry-After"] = str(failure.retry_after)
            return failure.status, {"ok": False, "error": error}, headers
        if call.method not in _METHODS:
            return 200, {"ok": False, "error": "unknown_method", "req_method": call.method}, {}
        refusal = "invalid_json" if call.encoding == "invalid" else self._auth_error(call)
        if refusal is not None:
            return 200, {"ok": False, "error": refusal}, {}
        workspace = "" if self.installs is None else self.installs.workspace_of(call.token)
        wait = (self._rate_limits.wait_for(call.method, call.args, workspace)
                if self._rate_limits else 0)
        if wait:
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)}
        try:
            with self._lock:
                payload = copy.deepcopy(_METHODS[call.method](self, call))
        except SlackError as error:
            return 200, {"ok": False, "error": error.code, **error.detail}, {}
        except Exception as error:  # a bug in the fake: say so rather than drop the line
            return 500, {"ok": False, "error": f"FakeSlack failed: {error!r}"}, {}
        return 200, {"ok": True, **payload}, {}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})

    # -- API methods (called with the lock held) ------------------------------------

    @api("api.test")
    def _api_test(self, call: RecordedCall) -> dict[str, Any]:
        """Echoes its text arguments; an ``error`` argument becomes the error, as in Slack."""
        if _text(call, "error"):
            raise SlackError(str(_text(call, "error")))
        echoed = {k: v for k, v in call.args.items() if isinstance(v, str) and k != "token"}
        return {"args": echoed} if echoed else {}

    @api("views.publish")
    def _views_publish(self, call: RecordedCall) -> dict[str, Any]:
        """A person's Home tab. Refused as Slack's method page says: ``not_enabled`` when
        the app has no Home tab, ``view_too_large`` past 250 kB, ``invalid_arguments`` for
        a view that is not a ``home`` view of valid blocks, or an unknown person."""
        user = _text(call, "user_id", missing="invalid_arguments")
        view = _structured_view(call)
        if not self.home_tab_enabled:
            raise SlackError("not_enabled")
        if len(json.dumps(view)) > 250_000:
            raise SlackError("view_too_large")
        if view.get("type") != "home" or user not in self._users:
            raise SlackError("invalid_arguments")
        blocks = view.get("blocks")
        if not isinstance(blocks, list) or len(blocks) > 100:
            raise SlackError("invalid_arguments")
        check_blocks(blocks)
        self._homes[str(user)] = view
        return {"view": {"id": f"V{next(self._ids):08d}", "type": "home", **view}}

    def home_of(self, user: str) -> dict[str, Any] | None:
        """The view last published to ``user``'s Home tab."""
        with self._lock:
            return copy.deepcopy(self._homes.get(user))

    @api("openid.connect.token")
    def _openid_connect_token(self, call: RecordedCall) -> dict[str, Any]:
        if self.sign_in is None:
            raise SlackError("invalid_client_id")  # the app has no Sign in with Slack
        return self.sign_in.token(call)

    @api("openid.connect.userInfo")
    def _openid_connect_user_info(self, call: RecordedCall) -> dict[str, Any]:
        if self.sign_in is None:
            raise SlackError("invalid_auth")
        return self.sign_in.user_info(call)

    @api("oauth.v2.access")
    def _oauth_v2_access(self, call: RecordedCall) -> dict[str, Any]:
        if self.installs is None:
            raise SlackError("invalid_client_id")  # the app is not distributed
        return self.installs.access(call)

    @api("auth.test")
    def _auth_test(self, call: RecordedCall) -> dict[str, Any]:
        installed = None if self.installs is None else self.installs.auth_test(call.token or "")
        if installed is not None:
            return installed
        return {
            "url": f"https://{self.team_domain}.slack.com/", "team": self.team,
            "user": self.bot_name, "team_id": self.team_id, "user_id": self.bot_user_id,
            "bot_id": self.bot_id, "is_enterprise_install": False,
        }

    @api("apps.connections.open")
    def _apps_connections_open(self, call: RecordedCall) -> dict[str, Any]:
        return {"url": self.socket_url}

    @api("chat.postMessage")
    def _chat_post_message(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._postable(call)
        blocks = _structured(call, "blocks", "invalid_blocks_format")
        text = self._checked_content(call, blocks)
        message = self._bot_message(call, text or "", blocks)
        for name in ("attachments", "metadata"):
            if call.field(name) is not None:
                message[name] = _structured(call, name)
        self._store(channel, message, _text(call, "thread_ts"))
        return {"channel": channel, "ts": message["ts"], "message": message}

    def _checked_content(
        self, call: RecordedCall, blocks: Any, max_text: int = MAX_TEXT_CHARS
    ) -> str | None:
        """The message's text (or markdown_text), after Slack's content refusals."""
        text, markdown = _text(call, "text"), _text(call, "markdown_text")
        check_message_content(text=text, markdown_text=markdown, blocks=blocks,
                              attachments=call.field("attachments"), max_text=max_text)
        return text if markdown is None else markdown

    @api("chat.update")
    def _chat_update(self, call: RecordedCall) -> dict[str, Any]:
        channel, message = self._own_message(call, "cant_update_message")
        blocks = _structured(call, "blocks", "invalid_blocks_format")
        text = self._checked_content(call, blocks, max_text=MAX_UPDATE_TEXT_CHARS)
        stream = self._streams.get((channel, message["ts"]))
        if stream is not None and stream.state == "in_progress":
            raise SlackError("streaming_state_conflict")
        if text is not None:
            message["text"] = text
        if blocks is not None:
            message["blocks"] = blocks
        if call.field("attachments") is not None:
            message["attachments"] = _structured(call, "attachments")
        message["edited"] = {"user": self._bot(call)[0], "ts": self._next_ts()}
        return {"channel": channel, "ts": message["ts"], "text": message["text"],
                "message": message}

    @api("chat.delete")
    def _chat_delete(self, call: RecordedCall) -> dict[str, Any]:
        channel, message = self._own_message(call, "cant_delete_message")
        self._messages[channel].remove(message)
        self._streams.pop((channel, message["ts"]), None)
        return {"channel": channel, "ts": message["ts"]}

    @api("chat.postEphemeral")
    def _chat_post_ephemeral(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._postable(call)
        user = _text(call, "user", "user_not_found")
        if user not in self._users:
            raise SlackError("user_not_found")
        members = self._channels.get(channel, {}).get("members")
        if members is not None and user not in members:
            raise SlackError("user_not_in_channel")
        blocks = _structured(call, "blocks", "invalid_blocks_format")
        text = self._checked_content(call, blocks)
        ephemeral = {"channel": channel, "user": user, "text": text or "", "blocks": blocks,
                     "thread_ts": _text(call, "thread_ts"), "message_ts": self._next_ts()}
        self._ephemerals.setdefault(str(channel), []).append(ephemeral)
        return {"message_ts": ephemeral["message_ts"]}

    @api("chat.getPermalink")
    def _chat_get_permalink(self, call: RecordedCall) -> dict[str, Any]:
        channel = _text(call, "channel", "channel_not_found")
        ts = _text(call, "message_ts", "message_not_found")
        assert channel is not None and ts is not None
        link = f"https://{self.team_domain}.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        message = self._find(channel, ts)
        if message is not None and message.get("thread_ts") not in (None, ts):
            link += f"?thread_ts={message['thread_ts']}&cid={channel}"
        return {"channel": channel, "permalink": link}

    @api("chat.startStream")
    def _chat_start_stream(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._postable(call)
        thread_ts = _text(call, "thread_ts", "invalid_arguments")
        if not self._is_dm(channel):
            # "required when streaming to channels"
            _text(call, "recipient_team_id", "missing_recipient_team_id")
            _text(call, "recipient_user_id", "missing_recipient_user_id")
        message = self._bot_message(call, "", None)
        stream = _Stream(channel, message["ts"])
        self._append_to_stream(call, stream, message)
        self._store(channel, message, thread_ts)
        self._streams[(channel, message["ts"])] = stream
        return {"channel": channel, "ts": message["ts"]}

    @api("chat.appendStream")
    def _chat_append_stream(self, call: RecordedCall) -> dict[str, Any]:
        stream, message = self._open_stream(call)
        self._append_to_stream(call, stream, message)
        return {"channel": stream.channel, "ts": stream.ts}

    @api("chat.stopStream")
    def _chat_stop_stream(self, call: RecordedCall) -> dict[str, Any]:
        stream, message = self._open_stream(call, stopping=True)
        blocks = _structured(call, "blocks", "invalid_blocks_format")
        check_blocks(blocks)
        self._append_to_stream(call, stream, message)
        if blocks is not None:
            message["blocks"] = blocks
        if call.field("metadata") is not None:
            message["metadata"] = _structured(call, "metadata")
        stream.state = "stopped"
        return {"channel": stream.channel, "ts": stream.ts, "message": message}

    @api("assistant.threads.setStatus")
    def _assistant_set_status(self, call: RecordedCall) -> dict[str, Any]:
        channel_id = _text(call, "channel_id", "channel_not_found")
        thread_ts = _text(call, "thread_ts", "invalid_arguments")
        status = call.args.get("status")
        if not isinstance(status, str):  # "" is allowed: it clears the status
            raise SlackError("invalid_arguments")
        loading = _structured(call, "loading_messages")
        if loading is not None and (
            not isinstance(loading, list) or len(loading) > MAX_LOADING_MESSAGES
        ):
            raise SlackError("invalid_arguments")
        self._statuses.append({"channel_id": channel_id, "thread_ts": thread_ts,
                               "status": status, "loading_messages": loading})
        return {}

    @api("assistant.threads.setTitle")
    def _assistant_set_title(self, call: RecordedCall) -> dict[str, Any]:
        channel_id = self._postable(call, "channel_id")
        thread_ts = _text(call, "thread_ts", "invalid_arguments")
        title = _text(call, "title", "invalid_arguments")
        self._titles.append({"channel_id": channel_id, "thread_ts": thread_ts, "title": title})
        return {}

    @api("assistant.threads.setSuggestedPrompts")
    def _assistant_set_prompts(self, call: RecordedCall) -> dict[str, Any]:
        channel_id = self._postable(call, "channel_id")
        # Optional: without it the prompts are set for the channel (the agent experience).
        thread_ts = _text(call, "thread_ts")
        prompts = _structured(call, "prompts")
        if not isinstance(prompts, list) or not 1 <= len(prompts) <= MAX_SUGGESTED_PROMPTS:
            raise SlackError("invalid_arguments")
        for prompt in prompts:
            if not isinstance(prompt, dict) or not prompt.get("title") or not prompt.get(
                "message"
            ):
                raise SlackError("invalid_arguments")
        self._prompts.append({"channel_id": channel_id, "thread_ts": thread_ts,
                              "prompts": prompts, "title": _text(call, "title")})
        return {}

    @api("reactions.add")
    def _reactions_add(self, call: RecordedCall) -> dict[str, Any]:
        key, name = self._reaction_target(call)
        reactions = self._reactions.setdefault(key, [])
        entry = next((r for r in reactions if r["name"] == name), None)
        bot_user = self._bot(call)[0]
        if entry is None:
            reactions.append({"name": name, "users": [bot_user], "count": 1})
        elif bot_user in entry["users"]:
            raise SlackError("already_reacted")
        else:
            entry["users"].append(bot_user)
            entry["count"] += 1
        return {}

    @api("reactions.remove")
    def _reactions_remove(self, call: RecordedCall) -> dict[str, Any]:
        key, name = self._reaction_target(call)
        reactions = self._reactions.get(key, [])
        entry = next((r for r in reactions if r["name"] == name), None)
        bot_user = self._bot(call)[0]
        if entry is None or bot_user not in entry["users"]:
            raise SlackError("no_reaction")
        entry["users"].remove(bot_user)
        entry["count"] -= 1
        if not entry["users"]:
            reactions.remove(entry)
        return {}

    def _reaction_target(self, call: RecordedCall) -> tuple[tuple[str, str], str]:
        name = _text(call, "name", "invalid_name")
        _text(call, "channel", "no_item_specified")
        channel = self._postable(call)
        ts = _text(call, "timestamp", "no_item_specified")
        return (str(channel), str(ts)), str(name).strip(":")

    @api("users.info")
    def _users_info(self, call: RecordedCall) -> dict[str, Any]:
        user = self._users.get(_text(call, "user", "user_not_found") or "")
        if user is None:
            raise SlackError("user_not_found")
        return {"user": user}

    @api("conversations.info")
    def _conversations_info(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._channels.get(_text(call, "channel", "channel_not_found") or "")
        if channel is None or not self._reaches(call, channel):
            raise SlackError("channel_not_found")
        return {"channel": channel}

    @api("conversations.open")
    def _conversations_open(self, call: RecordedCall) -> dict[str, Any]:
        # The bot's DM with one person: an "im" channel added with user=..., else one made
        # for them (Slack opens it), as Slack answers it; several people: an mpim is not
        # what Thoth asks for, so refused here.
        users = [u for u in (_text(call, "users", "users_list_not_supplied") or "").split(",")
                 if u]
        if len(users) != 1:
            raise SlackError("not_implemented" if users else "users_list_not_supplied")
        (user,) = users
        if user not in self._users:
            raise SlackError("user_not_found")
        with self._lock:
            found = next((c for c in self._channels.values()
                          if c.get("is_im") and c.get("user") == user), None)
            if found is None:
                found = self._channels[f"D{user}"] = {
                    "id": f"D{user}", "name": f"dm-{user}", "created": self._epoch,
                    "is_channel": False, "is_group": False, "is_im": True, "is_mpim": False,
                    "is_private": True, "is_archived": False, "is_member": True,
                    "context_team_id": self.team_id, "user": user}
        return {"channel": {"id": found["id"]}}

    @api("conversations.members")
    def _conversations_members(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._postable(call)
        members = self._channels.get(channel, {}).get("members")
        bot, _ = self._bot(call)  # each install's own bot user is the member
        everyone = [user for user in self._users if user not in (self.bot_user_id, bot)]
        listed = list(members) if members is not None else [bot, *everyone]
        try:
            start = int(_text(call, "cursor") or 0)
            limit = int(_text(call, "limit") or 100) or 100
        except ValueError as error:
            raise SlackError("invalid_cursor") from error
        more = start + limit < len(listed)
        return {"members": listed[start : start + limit],
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    @api("users.conversations")
    def _users_conversations(self, call: RecordedCall) -> dict[str, Any]:
        """The conversations a person is in (``user``; the bot when absent), of the asked
        ``types`` (default ``public_channel``), each needing its read scope. As Slack's
        reference has it: "Non-public channels are restricted to those where the calling
        user shares membership" — a private channel or group DM the bot is not in is
        never listed, nor one the token's workspace does not see (an install's reach).
        ``limit`` is at most 999; pages by an opaque cursor."""
        bot, _ = self._bot(call)
        person = _text(call, "user") or bot
        if person not in self._users:
            raise SlackError("user_not_found")
        return self._conversations_page(call, lambda info: self._is_member(info, person, bot)
                                        and (_kind(info) == "channel"
                                             or self._is_member(info, bot, bot)))

    @api("files.info")
    def _files_info(self, call: RecordedCall) -> dict[str, Any]:
        """A file's object (``files:read``); ``file_not_found`` for one it does not hold."""
        check_scope("files:read", self.scopes)
        file_id = _text(call, "file", "file_not_found")
        with self._lock:
            found = self._files.get(file_id or "")
        if found is None:
            raise SlackError("file_not_found")
        return {"file": dict(found[0])}

    def file_download(self, path: str, token: str | None) -> tuple[int, str, bytes]:
        """What ``url_private_download`` answers: the bytes to a bot token with
        ``files:read``; to anything else, as Slack does, its sign-in page (an HTML page,
        status 200), never an error a client would notice by its status."""
        file_id = path.removeprefix(FILES_PATH).split("/", 1)[0].removeprefix(
            f"{self.team_id}-")
        with self._lock:
            found = self._files.get(file_id)
        installed = self.installs is not None and token in self.installs.bots
        authorised = (token is not None and token.startswith("xoxb-")
                      and (self.bot_token is None or token == self.bot_token or installed)
                      and "files:read" in self.scopes.split(","))
        if found is None or not authorised:
            return 200, "text/html; charset=utf-8", SIGN_IN_PAGE
        info, data = found
        return 200, str(info["mimetype"]), data

    @api("conversations.list")
    def _conversations_list(self, call: RecordedCall) -> dict[str, Any]:
        """The workspace's conversations of the asked ``types`` (default
        ``public_channel``), each needing its read scope: every public channel, and the
        private channels and group DMs the bot is in (Slack lists only those the calling
        token may see). ``exclude_archived``; ``limit`` at most 999; an opaque cursor."""
        bot, _ = self._bot(call)
        return self._conversations_page(
            call, lambda info: _kind(info) == "channel" or self._is_member(info, bot, bot))

    def _conversations_page(self, call: RecordedCall,
                            listed_to: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """A page of the conversations of the asked ``types`` that ``listed_to`` admits
        (the asked read scopes checked first; ``exclude_archived``; ``limit`` and cursor)."""
        asked = [kind.strip() for kind in (_text(call, "types") or "public_channel").split(",")]
        if any(kind not in READ_SCOPES for kind in asked):
            raise SlackError("invalid_types")
        for kind in asked:
            check_scope(READ_SCOPES[kind], self.scopes)
        limit = _limit(call, default=100, most=1000)
        if limit > 999:
            raise SlackError("invalid_limit")
        exclude_archived = _flag(call, "exclude_archived")
        with self._lock:
            listed = [
                info for info in self._channels.values()
                if CONVERSATION_TYPES[_kind(info)] in asked and listed_to(info)
                and not (exclude_archived and info.get("is_archived"))
                and self._reaches(call, info)
            ]
        start = _page_start(_text(call, "cursor"))
        more = start + limit < len(listed)
        return {"channels": listed[start : start + limit],
                "response_metadata": {"next_cursor": _page_cursor(start + limit) if more
                                      else ""}}

    def _is_member(self, info: dict[str, Any], user: str, bot: str) -> bool:
        """``bot``: the calling token's bot user, whose membership is ``is_member``."""
        if user == bot:
            return bool(info.get("is_member"))
        members = info.get("members")
        return members is None or user in members

    @api("conversations.replies")
    def _conversations_replies(self, call: RecordedCall) -> dict[str, Any]:
        """A thread, oldest first: its parent, then the replies inside ``oldest``/``latest``
        (the bounds themselves only with ``inclusive``), at most ``limit`` messages a page.

        ``ts`` may name the parent or any message of the thread (an unthreaded message is
        a thread of one). Slack's reference does not say whether the bounds keep the parent
        out ("a message plus all the messages in reply to it"; "the earliest messages in
        the time range are returned first"); here the first page always begins with it,
        the harder answer for a consumer, which must filter it out itself. Later pages,
        reached by ``cursor``, hold replies only.
        """
        channel = self._readable(call)
        ts = _text(call, "ts", "thread_not_found")
        oldest = _timestamp(call, "oldest", "invalid_ts_oldest")
        latest = _timestamp(call, "latest", "invalid_ts_latest")
        inclusive = _flag(call, "inclusive")
        limit = _limit(call, default=1000, most=1000)
        resume = _decode_cursor(_text(call, "cursor"))
        named = self._find(channel, ts)
        root = str(named.get("thread_ts") or ts) if named is not None else str(ts)
        parent = self._find(channel, root)
        replies = [m for m in self._messages.get(channel, [])
                   if m.get("thread_ts") == root and m["ts"] != root]
        if parent is None and not replies:
            raise SlackError("thread_not_found")
        window = [m for m in replies if _within(Decimal(m["ts"]), oldest, latest, inclusive)]
        if resume is None:
            listed = ([parent] if parent is not None else []) + window
        else:
            listed = [m for m in window if Decimal(m["ts"]) >= resume]
        page, rest = listed[:limit], listed[limit:]
        metadata = _flag(call, "include_all_metadata")
        return {"messages": [self._visible(channel, m, metadata) for m in page],
                "has_more": bool(rest),
                "response_metadata": {"next_cursor": _encode_cursor(rest[0]["ts"]) if rest
                                      else ""}}

    @api("conversations.history")
    def _conversations_history(self, call: RecordedCall) -> dict[str, Any]:
        channel = self._readable(call)
        top = [m for m in self._messages.get(channel, [])
               if m.get("thread_ts") in (None, m["ts"])]
        metadata = _flag(call, "include_all_metadata")
        newest_first = [self._visible(channel, m, metadata) for m in reversed(top)]
        return _page(newest_first, call, default_limit=100)


def _structured_view(call: RecordedCall) -> dict[str, Any]:
    view = call.args.get("view")
    if isinstance(view, str):
        try:
            view = json.loads(view)
        except json.JSONDecodeError as error:
            raise SlackError("invalid_arguments") from error
    if not isinstance(view, dict):
        raise SlackError("invalid_arguments")
    return view


def _kind(info: dict[str, Any]) -> str:
    """A stored channel's kind, as ``add_channel`` takes it."""
    if info.get("is_im"):
        return "im"
    if info.get("is_mpim"):
        return "mpim"
    return "private" if info.get("is_private") or info.get("is_group") else "channel"


def _timestamp(call: RecordedCall, name: str, invalid: str) -> Decimal | None:
    """``oldest``/``latest``: a Unix timestamp ("1234567890.123456"), or absent."""
    text = _text(call, name)
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation as error:
        raise SlackError(invalid) from error
    if not value.is_finite() or value < 0:
        raise SlackError(invalid)
    return value


def _flag(call: RecordedCall, name: str) -> bool:
    """A boolean argument: the SDK sends ``1``/``0`` in forms, ``true`` in JSON."""
    return (_text(call, name) or "").strip().lower() in ("1", "true")


def _limit(call: RecordedCall, *, default: int, most: int) -> int:
    text = _text(call, "limit")
    try:
        asked = int(text) if text is not None else 0
    except ValueError as error:
        raise SlackError("invalid_arguments") from error
    return min(asked, most) if asked > 0 else default


def _within(ts: Decimal, oldest: Decimal | None, latest: Decimal | None,
            inclusive: bool) -> bool:
    """Inside the time range; its ends count only with ``inclusive``."""
    if oldest is not None and (ts < oldest or (ts == oldest and not inclusive)):
        return False
    return latest is None or ts < latest or (ts == latest and inclusive)


_CURSOR_PREFIX = "next_ts:"


def _encode_cursor(ts: str) -> str:
    """Opaque, as Slack's are (theirs read ``next_ts:<ts without its dot>`` in base64)."""
    digits = f"{Decimal(ts):.6f}".replace(".", "")
    return base64.b64encode(f"{_CURSOR_PREFIX}{digits}".encode()).decode()


def _page_cursor(start: int) -> str:
    return base64.b64encode(f"page:{start}".encode()).decode()


def _page_start(cursor: str | None) -> int:
    """Where a page given by ``_page_cursor`` starts (0 without one)."""
    if cursor is None:
        return 0
    try:
        text = base64.b64decode(cursor, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise SlackError("invalid_cursor") from error
    digits = text.removeprefix("page:")
    if not text.startswith("page:") or not digits.isdigit():
        raise SlackError("invalid_cursor")
    return int(digits)


def _decode_cursor(cursor: str | None) -> Decimal | None:
    if cursor is None:
        return None
    try:
        text = base64.b64decode(cursor, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise SlackError("invalid_cursor") from error
    digits = text.removeprefix(_CURSOR_PREFIX)
    if not text.startswith(_CURSOR_PREFIX) or not digits.isdigit() or len(digits) <= 6:
        raise SlackError("invalid_cursor")
    return Decimal(f"{digits[:-6]}.{digits[-6:]}")


def _page(items: list[dict[str, Any]], call: RecordedCall, default_limit: int) -> dict[str, Any]:
    """Cursor pagination as Slack does it; the cursor here is an offset."""
    try:
        start = int(_text(call, "cursor") or 0)
        limit = int(_text(call, "limit") or default_limit) or default_limit
    except ValueError as error:
        raise SlackError("invalid_cursor") from error
    page = items[start : start + limit]
    more = start + limit < len(items)
    return {"messages": page, "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""}}


def _parse_multipart(raw: bytes, content_type: str) -> dict[str, Any]:
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    parsed = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields: dict[str, Any] = {}
    for part in parsed.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            payload = b""
        is_file = part.get_filename() is not None
        fields[str(name)] = payload if is_file else payload.decode("utf-8", "replace")
    return fields


def _parse_body(raw: bytes, content_type: str) -> tuple[str, dict[str, Any]]:
    """The body's encoding and its arguments."""
    kind = content_type.split(";")[0].strip().lower()
    if not raw:
        return "none", {}
    if kind == "application/json":
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return "invalid", {}
        return ("json", body) if isinstance(body, dict) else ("invalid", {})
    if kind == "multipart/form-data":
        return "multipart", _parse_multipart(raw, content_type)
    text = raw.decode("utf-8", "replace")
    return "form", dict(parse_qsl(text, keep_blank_values=True))


class _Handler(LoopbackHandler):
    fake: FakeSlack

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _read(self) -> RecordedCall:
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        raw = self.read_body()
        encoding, body = _parse_body(raw, self.headers.get("content-type", ""))
        return RecordedCall(
            http_method=self.command,
            method=parts.path.rstrip("/").rsplit("/", 1)[-1],
            path=parts.path,
            query=query,
            headers={k.lower(): v for k, v in self.headers.items()},
            args={**query, **body},
            encoding=encoding,
            body_text=raw.decode("utf-8", "replace"),
            received_at=time.monotonic(),
        )

    def _handle(self) -> None:
        call = self._read()
        if call.path in (AUTHORIZE_PATH, INSTALL_AUTHORIZE_PATH):
            # The browser's step of Sign in with Slack, or of installing, on slack.com.
            sign_in, installs = self.fake.sign_in, self.fake.installs
            headers: dict[str, str] = {}
            status, text = 400, "invalid_client_id"
            if call.path == AUTHORIZE_PATH and sign_in is not None:
                status, headers, text = sign_in.authorize(call.query)
            if call.path == INSTALL_AUTHORIZE_PATH and installs is not None:
                status, headers, text = installs.authorize(call.query)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            body = text.encode()
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if call.path.startswith(FILES_PATH):
            _, delay = self.fake._record(call)
            if delay and self.fake._stopping.wait(delay):
                self.close_connection = True
                return
            status, content_type, data = self.fake.file_download(call.path, call.token)
            # A client that gave up (a timeout, a cap) is not answered.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_body(status, data, content_type)
            return
        if call.path.startswith(RESPONSE_URL_PATH):
            self.fake._responded(call)
            self._send_text(200, "ok")
            return
        failure, delay = self.fake._record(call)
        try:
            if delay and self.fake._stopping.wait(delay):
                self.close_connection = True
                return
            if failure is not None and failure.kind == "reset":
                if failure.applied:
                    self.fake._respond(call, None)
                self._reset()
                return
            status, payload, headers = self.fake._respond(call, failure)
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

    def _send_text(self, status: int, text: str) -> None:
        self.send_body(status, text.encode(), "text/plain; charset=utf-8")

    def _reset(self) -> None:
        """Close the connection with a TCP reset, no answer (SO_LINGER 0)."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   struct.pack("ii", 1, 0))
        self.close_connection = True

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        every = {"x-slack-req-id": f"req{next(self.fake._ids):06d}",
                 "x-oauth-scopes": self.fake.scopes, **headers}
        self.send_body(status, json.dumps(payload).encode(), "application/json; charset=utf-8",
                       every)
