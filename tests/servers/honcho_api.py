"""A loopback server that speaks Honcho's v3 HTTP API, for the real ``honcho-ai`` SDK.

State lives in memory, per workspace: peers, sessions (with their members), messages,
conclusions and peer cards. The deriver and the dreamer run when a test says
(``run_deriver``, ``run_dreamer``), as the real ones run minutes after the messages came.
Answers are shaped like Honcho's own (status codes, JSON fields, ``{"detail": ...}``
errors, FastAPI-style 422 bodies) so they pass the SDK's validation. Nothing is reasoned
about: ``peer.chat`` answers with a deterministic text built from the stored conclusions
and messages about the observed peer, and representations are the stored conclusions,
one a line.

Every request is recorded whole (method, path, query, headers, JSON body). Faults are
scripted: ``fail_next``, ``delay_next``, ``delay_all``, ``hang``, ``reset_after_applying``
(the write lands, its answer is lost). An outage is ``down(mode)`` … ``up()``, or
``down_for(seconds, mode)``, in the ways a real Honcho is away: ``"status"`` (every
request answered 503, or 502/500, with ``Retry-After`` if asked: a load balancer with no
healthy backend), ``"refused"`` (the port closed: connection refused; open keep-alive
connections reset), ``"reset"`` (accepted, then reset without an answer) and ``"hang"``
(accepted, never answered; reset at ``up``). Nothing done while down is recorded in
``requests`` (``turned_away`` counts it). Use it as ``with FakeHoncho() as server:`` and
point ``Honcho(base_url=server.url, ...)`` at it.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from tests.servers.loopback import LoopbackHandler, LoopbackServer, QuietServer

ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,512}$")
MAX_MESSAGES_PER_CALL = 100
MAX_MESSAGE_CHARS = 25_000
MAX_CONCLUSIONS_PER_CALL = 100
MAX_CONCLUSION_CHARS = 65_535
# EMBEDDING_MAX_INPUT_TOKENS. Tokens are counted here as Honcho's embedding tokenizer
# (a byte-pair one) counts them at worst: an ASCII word or mark is one, and a character
# outside ASCII (CJK, emoji) one per UTF-8 byte past its first — a run of Chinese or emoji
# is many tokens, never the one "word" a regex sees.
MAX_CONCLUSION_TOKENS = 8_192
MAX_QUERY_CHARS = 10_000
MAX_PAGE_SIZE = 100
DEFAULT_MAX_CONCLUSIONS = 25
NO_CONTENT = object()  # a handler's payload for a 204


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # without the query string, percent-encoding as sent
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, None when there was no body, the raw text if it was not JSON
    received_at: float


DOWN_MODES = ("status", "refused", "reset", "hang")


@dataclass(frozen=True)
class _Down:
    mode: str
    status: int
    retry_after: float | None


@dataclass
class _Fault:
    # "fail", "delay", "late" (answered after the work is done) or "lost" (the work is
    # done, then the connection is reset: the client never hears it landed)
    kind: str
    remaining: int
    match: str | None
    status: int = 500
    seconds: float = 0.0
    detail: Any = "Injected fault"
    retry_after: float | None = None

    def applies_to(self, request: RecordedRequest) -> bool:
        # A regular expression searched in the path ("/messages", or "/conclusions$" for
        # the create alone, not its /list).
        return self.match is None or re.search(self.match, request.path) is not None


@dataclass
class _Workspace:
    record: dict[str, Any]
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    members: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    conclusions: dict[str, dict[str, Any]] = field(default_factory=dict)
    cards: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # Messages the deriver has yet to work on (it batches; ``FakeHoncho.run_deriver``).
    underived: list[str] = field(default_factory=list)


class ApiError(Exception):
    """An HTTP error answer; ``detail`` becomes the body's ``detail``."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def invalid(loc: list[Any], msg: str, value: Any, kind: str = "value_error") -> ApiError:
    """A 422 in FastAPI's shape: ``{"detail": [{"type", "loc", "msg", "input"}]}``."""
    return ApiError(422, [{"type": kind, "loc": loc, "msg": msg, "input": value}])


MAX_SESSION_ALLOWLIST = 1_000


def session_allowlist(body: dict[str, Any]) -> set[str] | None:
    """``filters: {"session_id": id | [ids] | {"in": [ids]}}`` on representation and chat
    (server 3.0.12, ``src/utils/filter.py``): any other key, a wildcard or more than 1 000
    sessions is a 422; an empty list allows nothing."""
    filters = body.get("filters")
    if filters is None:
        return None
    if not isinstance(filters, dict) or set(filters) != {"session_id"}:
        raise invalid(["body", "filters"], "only session_id may be filtered here", filters)
    value = filters["session_id"]
    if isinstance(value, dict) and set(value) == {"in"}:
        value = value["in"]
    ids = [value] if isinstance(value, str) else value
    if not isinstance(ids, list) or not all(isinstance(i, str) and i != "*" for i in ids):
        raise invalid(["body", "filters", "session_id"], "invalid session allowlist", value)
    if len(ids) > MAX_SESSION_ALLOWLIST:
        raise invalid(["body", "filters", "session_id"],
                      f"at most {MAX_SESSION_ALLOWLIST} sessions", len(ids))
    return set(ids)


def _tokens(text: str) -> int:
    ascii_tokens = len(re.findall(r"[A-Za-z0-9_]+|[!-/:-@\[-`{-~]", text))
    wide = sum(max(1, len(char.encode("utf-8")) - 1) for char in text if ord(char) > 127)
    return ascii_tokens + wide


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _check_id(value: Any, loc: list[Any]) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise invalid(
            loc, f"String should match pattern '{ID_PATTERN.pattern}'", value,
            "string_pattern_mismatch",
        )
    return value


def _optional_id(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return None if value is None else _check_id(value, ["body", key])


def _object(body: Any, *, required: bool = False) -> dict[str, Any]:
    if body is None and not required:
        return {}
    if not isinstance(body, dict):
        raise invalid(["body"], "Input should be a valid dictionary", body, "dict_type")
    return body


def _optional_dict(body: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = body.get(key)
    if value is not None and not isinstance(value, dict):
        raise invalid(["body", key], "Input should be a valid dictionary", value, "dict_type")
    return value


def _int_param(query: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = query.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(
            ["query", key], "Input should be a valid integer", raw, "int_parsing"
        ) from None
    if not low <= value <= high:
        raise invalid(["query", key], f"Input should be between {low} and {high}", value)
    return value


def _flag(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1")


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _page(items: list[dict[str, Any]], query: dict[str, str]) -> dict[str, Any]:
    """fastapi-pagination's ``Page``: items, total, page, size, pages."""
    page = _int_param(query, "page", 1, 1, 1_000_000)
    size = _int_param(query, "size", 50, 1, MAX_PAGE_SIZE)
    start = (page - 1) * size
    return {
        "items": items[start : start + size],
        "total": len(items),
        "page": page,
        "size": size,
        "pages": math.ceil(len(items) / size),
    }


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda actual, value: actual == value,
    "ne": lambda actual, value: actual != value,
    "in": lambda actual, value: actual in value,
    "contains": lambda actual, value: actual is not None and value in actual,
    "gt": lambda actual, value: actual is not None and actual > value,
    "gte": lambda actual, value: actual is not None and actual >= value,
    "lt": lambda actual, value: actual is not None and actual < value,
    "lte": lambda actual, value: actual is not None and actual <= value,
}
_FILTER_ALIASES = {"observer": "observer_id", "observed": "observed_id", "peer": "peer_id"}


def _moment(value: Any) -> Any:
    """A timestamp as the server compares it (a datetime, whatever its ISO spelling)."""
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        raise invalid(["body", "filters", "created_at"], "Invalid datetime", value) from None


def _value_matches(actual: Any, expected: Any, *, moment: bool = False) -> bool:
    if expected == "*":
        return True
    if isinstance(expected, dict) and expected and set(expected) <= set(_OPERATORS):
        if moment:
            actual = _moment(actual)
            expected = {op: _moment(value) for op, value in expected.items()}
        return all(_OPERATORS[op](actual, value) for op, value in expected.items())
    if moment:
        return bool(_moment(actual) == _moment(expected))
    return bool(actual == expected)


def matches(record: dict[str, Any], filters: dict[str, Any] | None) -> bool:
    """Honcho's filter language, the common part: equality, operators, AND/OR/NOT."""
    for key, expected in (filters or {}).items():
        if key == "AND":
            ok = all(matches(record, part) for part in expected)
        elif key == "OR":
            ok = any(matches(record, part) for part in expected)
        elif key == "NOT":
            ok = not any(matches(record, part) for part in expected)
        elif key == "metadata" and isinstance(expected, dict):
            meta = record.get("metadata") or {}
            ok = all(_value_matches(meta.get(k), v) for k, v in expected.items())
        else:
            ok = _value_matches(record.get(_FILTER_ALIASES.get(key, key)), expected,
                                moment=key == "created_at")
        if not ok:
            return False
    return True


@dataclass
class Call:
    """One routed request: path parameters (decoded, validated), query and body."""

    params: dict[str, str]
    query: dict[str, str]
    body: Any

    @property
    def filters(self) -> dict[str, Any] | None:
        return _optional_dict(_object(self.body), "filters")


Handler = Callable[["_Api", _Workspace, Call], tuple[int, Any]]
_ROUTES: list[tuple[str, re.Pattern[str], list[str], str]] = []


def route(method: str, template: str) -> Callable[[Handler], Handler]:
    names = re.findall(r"{(\w+)}", template)
    regex = re.compile(re.sub(r"{\w+}", "([^/]+)", template) + "/?")

    def register(handler: Handler) -> Handler:
        _ROUTES.append((method, regex, names, handler.__name__))
        return handler

    return register


W = "/v3/workspaces/{workspace_id}"
S = W + "/sessions/{session_id}"
P = W + "/peers/{peer_id}"


class _Api:
    """The routes, over the fake's state. Called with the fake's lock held."""

    def __init__(self, fake: FakeHoncho) -> None:
        self.fake = fake

    # -- dispatch -----------------------------------------------------------------

    def dispatch(self, request: RecordedRequest) -> tuple[int, Any]:
        known_path = False
        for method, regex, names, handler_name in _ROUTES:
            found = regex.fullmatch(request.path)
            if found is None:
                continue
            known_path = True
            if method != request.method:
                continue
            params = {
                name: _check_id(unquote(value), ["path", name])
                for name, value in zip(names, found.groups(), strict=True)
            }
            call = Call(params, request.query, request.body)
            handler: Callable[[_Workspace, Call], tuple[int, Any]] = getattr(self, handler_name)
            return handler(self._workspace(params), call)
        if known_path:
            raise ApiError(405, "Method Not Allowed")
        raise ApiError(404, "Not Found")

    def _workspace(self, params: dict[str, str]) -> _Workspace:
        workspace_id = params.get("workspace_id")
        if workspace_id is None:
            return _Workspace(record={})  # routes above any one workspace ignore it
        workspace = self.fake.workspaces.get(workspace_id)
        if workspace is None:
            raise ApiError(404, f"Workspace {workspace_id} not found")
        return workspace

    # -- shared helpers -----------------------------------------------------------

    def _ensure_peer(self, ws: _Workspace, peer_id: str) -> tuple[dict[str, Any], bool]:
        peer = ws.peers.get(peer_id)
        if peer is not None:
            return peer, False
        peer = {
            "id": peer_id, "workspace_id": ws.record["id"], "created_at": _now(),
            "metadata": {}, "configuration": {},
        }
        ws.peers[peer_id] = peer
        return peer, True

    def _ensure_session(self, ws: _Workspace, session_id: str) -> tuple[dict[str, Any], bool]:
        session = ws.sessions.get(session_id)
        if session is not None:
            return session, False
        session = {
            "id": session_id, "is_active": True, "workspace_id": ws.record["id"],
            "metadata": {}, "configuration": {}, "created_at": _now(),
        }
        ws.sessions[session_id] = session
        ws.members[session_id] = {}
        return session, True

    def _session(self, ws: _Workspace, session_id: str) -> dict[str, Any]:
        if session_id not in ws.sessions:
            raise ApiError(404, f"Session {session_id} not found")
        return ws.sessions[session_id]

    def _peer(self, ws: _Workspace, peer_id: str) -> dict[str, Any]:
        if peer_id not in ws.peers:
            raise ApiError(404, f"Peer {peer_id} not found")
        return ws.peers[peer_id]

    def _add_members(self, ws: _Workspace, session_id: str, peers: Any) -> None:
        if not isinstance(peers, dict):
            raise invalid(["body"], "Input should be a valid dictionary", peers, "dict_type")
        for peer_id, config in peers.items():
            _check_id(peer_id, ["body", peer_id])
            self._ensure_peer(ws, peer_id)
            ws.members[session_id][peer_id] = dict(config or {})

    @staticmethod
    def _update(record: dict[str, Any], body: dict[str, Any]) -> None:
        for key in ("metadata", "configuration"):
            value = _optional_dict(body, key)
            if value is not None:
                record[key] = value

    def _about(
        self, ws: _Workspace, observer: str, observed: str, session_id: str | None = None
    ) -> list[dict[str, Any]]:
        return [
            c for c in ws.conclusions.values()
            if c["observer_id"] == observer and c["observed_id"] == observed
            and (session_id is None or c["session_id"] == session_id)
        ]

    def _said(self, ws: _Workspace, peer_id: str | None, session_id: str | None) -> list[str]:
        return [
            m["content"] for m in ws.messages
            if (peer_id is None or m["peer_id"] == peer_id)
            and (session_id is None or m["session_id"] == session_id)
        ]

    @staticmethod
    def _rank(
        conclusions: list[dict[str, Any]], search_query: Any, top_k: Any, limit: Any
    ) -> list[dict[str, Any]]:
        """Newest first; with a search query, those sharing most words with it first."""
        ranked = list(reversed(conclusions))
        if isinstance(search_query, str) and search_query:
            wanted = _words(search_query)
            ranked.sort(key=lambda c: -len(wanted & _words(c["content"])))
            if top_k is not None:
                ranked = ranked[: int(top_k)]
        return ranked[: int(limit or DEFAULT_MAX_CONCLUSIONS)]

    @staticmethod
    def _representation(conclusions: list[dict[str, Any]]) -> str:
        if not conclusions:
            return ""
        lines = [f"[{c['created_at']}] {c['content']}" for c in conclusions]
        return "## Explicit Observations\n\n" + "\n".join(lines)

    def _answer(
        self, ws: _Workspace, observer: str | None, observed: str | None, session_id: str | None
    ) -> str:
        """Deterministic chat content: what is stored about ``observed``."""
        facts = [
            c["content"] for c in ws.conclusions.values()
            if (observer is None or c["observer_id"] == observer)
            and (observed is None or c["observed_id"] == observed)
        ]
        said = self._said(ws, observed, session_id)
        who = observed or "the workspace"
        if not facts and not said:
            return f"Nothing is known about {who} yet."
        parts = [f"About {who}:"]
        if facts:
            parts.append("Conclusions: " + "; ".join(facts) + ".")
        if said:
            parts.append("Messages: " + " | ".join(said))
        return " ".join(parts)

    def _chat_reply(self, content: str | None, body: dict[str, Any]) -> tuple[int, Any]:
        if self.fake._chat_replies:
            content = self.fake._chat_replies.popleft()
        if body.get("stream"):
            return 200, _SSE([{"delta": {"content": content}, "done": False},
                              {"delta": {"content": None}, "done": True}])
        return 200, {"content": content}

    def _search(self, ws: _Workspace, call: Call, **scope: str) -> tuple[int, Any]:
        body = _object(call.body, required=True)
        query = body.get("query")
        if not isinstance(query, str):
            raise invalid(["body", "query"], "Field required", query, "missing")
        limit = int(body.get("limit") or 10)
        hits = [
            m for m in ws.messages
            if query.lower() in m["content"].lower()
            and all(m[key] == value for key, value in scope.items())
            and matches(m, _optional_dict(body, "filters"))
        ]
        return 200, hits[:limit]

    # -- workspaces -----------------------------------------------------------------

    @route("POST", "/v3/workspaces")
    def workspace_get_or_create(self, _: _Workspace, call: Call) -> tuple[int, Any]:
        body = _object(call.body, required=True)
        workspace_id = _check_id(body.get("id"), ["body", "id"])
        workspace = self.fake.workspaces.get(workspace_id)
        created = workspace is None
        if workspace is None:
            workspace = _Workspace(record={
                "id": workspace_id, "metadata": {}, "configuration": {}, "created_at": _now(),
            })
            self.fake.workspaces[workspace_id] = workspace
        self._update(workspace.record, body)
        return (201 if created else 200), workspace.record

    @route("POST", "/v3/workspaces/list")
    def workspaces_list(self, _: _Workspace, call: Call) -> tuple[int, Any]:
        records = [w.record for w in self.fake.workspaces.values()]
        return 200, _page([r for r in records if matches(r, call.filters)], call.query)

    @route("PUT", W)
    def workspace_update(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        self._update(ws.record, _object(call.body))
        return 200, ws.record

    @route("DELETE", W)
    def workspace_delete(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        del self.fake.workspaces[ws.record["id"]]
        return 204, NO_CONTENT

    @route("GET", W + "/queue/status")
    def queue_status(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        zero = {
            "total_work_units": 0, "completed_work_units": 0,
            "in_progress_work_units": 0, "pending_work_units": 0,
        }
        return 200, {**zero, "sessions": {}}

    @route("POST", W + "/schedule_dream")
    def schedule_dream(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        return 204, NO_CONTENT

    @route("POST", W + "/chat")
    def workspace_chat(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = self._chat_body(call)
        return self._chat_reply(self._answer(ws, None, None, _optional_id(body, "session_id")),
                                body)

    @route("POST", W + "/search")
    def workspace_search(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        return self._search(ws, call)

    # -- peers ----------------------------------------------------------------------

    @route("POST", W + "/peers")
    def peer_get_or_create(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = _object(call.body, required=True)
        peer, created = self._ensure_peer(ws, _check_id(body.get("id"), ["body", "id"]))
        self._update(peer, body)
        return (201 if created else 200), peer

    @route("POST", W + "/peers/list")
    def peers_list(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peers = [p for p in ws.peers.values() if matches(p, call.filters)]
        return 200, _page(peers, call.query)

    @route("PUT", P)
    def peer_update(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peer = self._peer(ws, call.params["peer_id"])
        self._update(peer, _object(call.body))
        return 200, peer

    @route("POST", P + "/sessions")
    def peer_sessions(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peer_id = call.params["peer_id"]
        sessions = [
            s for sid, s in ws.sessions.items()
            if peer_id in ws.members.get(sid, {}) and matches(s, call.filters)
        ]
        return 200, _page(sessions, call.query)

    def _chat_body(self, call: Call) -> dict[str, Any]:
        body = _object(call.body, required=True)
        query = body.get("query")
        if not isinstance(query, str) or not 1 <= len(query) <= MAX_QUERY_CHARS:
            raise invalid(["body", "query"], "String should have 1 to 10000 characters",
                          query, "string_too_long")
        return body

    @route("POST", P + "/chat")
    def peer_chat(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = self._chat_body(call)
        peer_id = call.params["peer_id"]
        target = _optional_id(body, "target")
        session_id = _optional_id(body, "session_id")
        self._ensure_peer(ws, peer_id)  # Honcho gets-or-creates the asking peer
        allowed = session_allowlist(body)
        if allowed is None:
            return self._chat_reply(self._answer(ws, peer_id, target or peer_id, session_id), body)
        # As the server does: the allowlist scopes what is recalled (explicit conclusions
        # of those sessions), but the peer card, built from every session, is injected
        # unless the workspace turned cards off (src/dialectic/chat.py).
        observed = target or peer_id
        facts = [c["content"] for c in self._about(ws, peer_id, observed)
                 if c.get("session_id") in allowed]
        card = ws.cards.get((peer_id, observed))
        uses_cards = (ws.record.get("configuration") or {}).get("peer_card", {}).get("use")
        parts = [f"About {observed}:"]
        if card and uses_cards is not False:
            parts.append("Card: " + "; ".join(card) + ".")
        if facts:
            parts.append("Conclusions: " + "; ".join(facts) + ".")
        return self._chat_reply(" ".join(parts) if len(parts) > 1 else None, body)

    @route("POST", P + "/representation")
    def peer_representation(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = _object(call.body)
        peer_id = call.params["peer_id"]
        observed = _optional_id(body, "target") or peer_id
        session_id = _optional_id(body, "session_id")
        allowed = session_allowlist(body)
        if allowed is not None and session_id is not None and session_id not in allowed:
            raise invalid(["body", "session_id"], "session_id must be in the allowlist",
                          session_id)
        about = self._about(ws, peer_id, observed, session_id)
        if allowed is not None:
            # Under an allowlist only conclusions stamped with a listed session are served;
            # one with no session never is (Honcho's session-purity rule).
            about = [c for c in about if c.get("session_id") in allowed]
        chosen = self._rank(about, body.get("search_query"), body.get("search_top_k"),
                            body.get("max_conclusions"))
        return 200, {"representation": self._representation(chosen)}

    @route("GET", P + "/context")
    def peer_context(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peer_id = call.params["peer_id"]
        target = call.query.get("target")
        observed = _check_id(target, ["query", "target"]) if target else peer_id
        chosen = self._rank(self._about(ws, peer_id, observed), call.query.get("search_query"),
                            call.query.get("search_top_k"), call.query.get("max_conclusions"))
        return 200, {
            "peer_id": peer_id, "target_id": observed,
            "representation": self._representation(chosen),
            "peer_card": ws.cards.get((peer_id, observed)),
        }

    @route("GET", P + "/card")
    def peer_card_get(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peer_id = call.params["peer_id"]
        observed = call.query.get("target") or peer_id
        return 200, {"peer_card": ws.cards.get((peer_id, observed))}

    @route("PUT", P + "/card")
    def peer_card_set(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        peer_id = call.params["peer_id"]
        card = _object(call.body, required=True).get("peer_card")
        if not isinstance(card, list) or not all(isinstance(line, str) for line in card):
            raise invalid(["body", "peer_card"], "Input should be a valid list", card,
                          "list_type")
        ws.cards[(peer_id, call.query.get("target") or peer_id)] = list(card)
        return 200, {"peer_card": card}

    @route("POST", P + "/search")
    def peer_search(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        return self._search(ws, call, peer_id=call.params["peer_id"])

    # -- sessions -------------------------------------------------------------------

    @route("POST", W + "/sessions")
    def session_get_or_create(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = _object(call.body, required=True)
        session_id = _check_id(body.get("id"), ["body", "id"])
        session, created = self._ensure_session(ws, session_id)
        self._update(session, body)
        if body.get("peers") is not None:
            self._add_members(ws, session_id, body["peers"])
        return (201 if created else 200), session

    @route("POST", W + "/sessions/list")
    def sessions_list(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        sessions = [s for s in ws.sessions.values() if matches(s, call.filters)]
        return 200, _page(sessions, call.query)

    @route("PUT", S)
    def session_update(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session = self._session(ws, call.params["session_id"])
        self._update(session, _object(call.body))
        return 200, session

    @route("DELETE", S)
    def session_delete(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        del ws.sessions[session_id]
        ws.members.pop(session_id, None)
        ws.messages[:] = [m for m in ws.messages if m["session_id"] != session_id]
        for conclusion_id, c in list(ws.conclusions.items()):
            if c["session_id"] == session_id:
                del ws.conclusions[conclusion_id]
        return 202, {"message": "Session deleted successfully"}

    @route("POST", S + "/peers")
    def session_peers_add(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        self._add_members(ws, session_id, call.body)
        return 200, ws.sessions[session_id]

    @route("PUT", S + "/peers")
    def session_peers_set(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        ws.members[session_id] = {}
        self._add_members(ws, session_id, call.body)
        return 200, ws.sessions[session_id]

    @route("DELETE", S + "/peers")
    def session_peers_remove(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        if not isinstance(call.body, list):
            raise invalid(["body"], "Input should be a valid list", call.body, "list_type")
        for peer_id in call.body:
            ws.members[session_id].pop(peer_id, None)
        return 200, ws.sessions[session_id]

    @route("GET", S + "/peers")
    def session_peers_list(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        return 200, _page([ws.peers[p] for p in ws.members[session_id]], call.query)

    @route("GET", S + "/peers/{peer_id}/config")
    def session_peer_config_get(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        members = ws.members.get(self._session(ws, call.params["session_id"])["id"], {})
        if call.params["peer_id"] not in members:
            raise ApiError(404, "Peer not in session")
        return 200, {"observe_others": None, "observe_me": None,
                     **members[call.params["peer_id"]]}

    @route("PUT", S + "/peers/{peer_id}/config")
    def session_peer_config_set(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        members = ws.members.get(self._session(ws, call.params["session_id"])["id"], {})
        if call.params["peer_id"] not in members:
            raise ApiError(404, "Peer not in session")
        members[call.params["peer_id"]].update(_object(call.body))
        return 204, NO_CONTENT

    @route("GET", S + "/context")
    def session_context(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        messages = [m for m in ws.messages if m["session_id"] == session_id]
        if "tokens" in call.query:
            budget = _int_param(call.query, "tokens", 0, 1, 10**9)
            kept: list[dict[str, Any]] = []
            for message in reversed(messages):
                budget -= message["token_count"]
                if budget < 0:
                    break
                kept.insert(0, message)
            messages = kept
        target = call.query.get("peer_target")
        representation, card = None, None
        if target:
            observer = call.query.get("peer_perspective") or target
            representation = self._representation(self._rank(
                self._about(ws, observer, target), call.query.get("search_query"),
                call.query.get("search_top_k"), call.query.get("max_conclusions"),
            )) or None
            card = ws.cards.get((observer, target))
        return 200, {"id": session_id, "messages": messages, "summary": None,
                     "peer_representation": representation, "peer_card": card}

    @route("GET", S + "/summaries")
    def session_summaries(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = self._session(ws, call.params["session_id"])["id"]
        return 200, {"id": session_id, "short_summary": None, "long_summary": None}

    @route("POST", S + "/search")
    def session_search(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        return self._search(ws, call, session_id=call.params["session_id"])

    # -- messages -------------------------------------------------------------------

    @staticmethod
    def _check_message(index: int, item: Any) -> dict[str, Any]:
        loc: list[Any] = ["body", "messages", index]
        if not isinstance(item, dict):
            raise invalid(loc, "Input should be a valid dictionary", item, "dict_type")
        content = item.get("content")
        if not isinstance(content, str):
            raise invalid([*loc, "content"], "Input should be a valid string", content,
                          "string_type")
        if len(content) > MAX_MESSAGE_CHARS:
            raise invalid([*loc, "content"],
                          f"String should have at most {MAX_MESSAGE_CHARS} characters",
                          content, "string_too_long")
        _check_id(item.get("peer_id"), [*loc, "peer_id"])
        _optional_dict(item, "metadata")
        created_at = item.get("created_at")
        if created_at is not None:
            try:
                datetime.fromisoformat(str(created_at))
            except ValueError:
                raise invalid([*loc, "created_at"], "Input should be a valid datetime",
                              created_at, "datetime_from_date_parsing") from None
        return item

    @route("POST", S + "/messages")
    def messages_create(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        items = _object(call.body, required=True).get("messages")
        if not isinstance(items, list):
            raise invalid(["body", "messages"], "Field required", items, "missing")
        if not 1 <= len(items) <= MAX_MESSAGES_PER_CALL:
            raise invalid(["body", "messages"],
                          f"List should have 1 to {MAX_MESSAGES_PER_CALL} items",
                          len(items), "too_long" if items else "too_short")
        checked = [self._check_message(i, item) for i, item in enumerate(items)]
        session_id = call.params["session_id"]
        self._ensure_session(ws, session_id)  # Honcho gets-or-creates the session
        created = []
        for item in checked:
            self._ensure_peer(ws, item["peer_id"])
            ws.members[session_id].setdefault(item["peer_id"], {})
            message = {
                "id": f"msg_{next(self.fake._ids):06d}", "content": item["content"],
                "peer_id": item["peer_id"], "session_id": session_id,
                "metadata": item.get("metadata") or {},
                "created_at": item.get("created_at") or _now(),
                "workspace_id": ws.record["id"], "token_count": _tokens(item["content"]),
            }
            ws.messages.append(message)
            created.append(message)
            if self._observed(ws, session_id, item["peer_id"]):
                ws.underived.append(message["id"])
        return 201, created

    @staticmethod
    def _observed(ws: _Workspace, session_id: str, peer_id: str) -> bool:
        """Whether the deriver learns from this peer's messages here: not when the peer,
        or its membership of the session, says ``observe_me: false``."""
        settings = [ws.peers[peer_id].get("configuration") or {},
                    ws.members.get(session_id, {}).get(peer_id) or {}]
        return all(setting.get("observe_me") is not False for setting in settings)

    @route("POST", S + "/messages/list")
    def messages_list(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        session_id = call.params["session_id"]
        self._session(ws, session_id)
        found = [
            m for m in ws.messages
            if m["session_id"] == session_id and matches(m, call.filters)
        ]
        if _flag(call.query.get("reverse")):
            found.reverse()
        return 200, _page(found, call.query)

    def _message(self, ws: _Workspace, call: Call) -> dict[str, Any]:
        for message in ws.messages:
            if (message["id"], message["session_id"]) == (
                call.params["message_id"], call.params["session_id"],
            ):
                return message
        raise ApiError(404, f"Message with ID {call.params['message_id']} not found")

    @route("GET", S + "/messages/{message_id}")
    def message_get(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        return 200, self._message(ws, call)

    @route("PUT", S + "/messages/{message_id}")
    def message_update(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        message = self._message(ws, call)
        metadata = _optional_dict(_object(call.body), "metadata")
        if metadata is not None:
            message["metadata"] = metadata
        return 200, message

    # -- conclusions ----------------------------------------------------------------

    @staticmethod
    def _check_conclusion(index: int, item: Any) -> dict[str, Any]:
        loc: list[Any] = ["body", "conclusions", index]
        if not isinstance(item, dict):
            raise invalid(loc, "Input should be a valid dictionary", item, "dict_type")
        content = item.get("content")
        if not isinstance(content, str) or not 1 <= len(content) <= MAX_CONCLUSION_CHARS:
            raise invalid([*loc, "content"],
                          f"String should have 1 to {MAX_CONCLUSION_CHARS} characters",
                          content, "string_too_long")
        if _tokens(content) > MAX_CONCLUSION_TOKENS:
            raise invalid([*loc, "content"],
                          f"Content exceeds {MAX_CONCLUSION_TOKENS} tokens", len(content))
        for key in ("observer_id", "observed_id"):
            _check_id(item.get(key), [*loc, key])
        if item.get("session_id") is not None:
            _check_id(item["session_id"], [*loc, "session_id"])
        return item

    @route("POST", W + "/conclusions")
    def conclusions_create(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        items = _object(call.body, required=True).get("conclusions")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_CONCLUSIONS_PER_CALL:
            raise invalid(["body", "conclusions"],
                          f"List should have 1 to {MAX_CONCLUSIONS_PER_CALL} items",
                          items, "too_long")
        checked = [self._check_conclusion(i, item) for i, item in enumerate(items)]
        for item in checked:  # Honcho refuses unknown sessions and peers with a 404
            if item.get("session_id") is not None:
                self._session(ws, item["session_id"])
            self._peer(ws, item["observer_id"])
            self._peer(ws, item["observed_id"])
        created = []
        stamp = _now()  # one transaction, one creation time for the whole batch
        for item in checked:
            conclusion = {
                "id": f"cncl_{next(self.fake._ids):06d}", "content": item["content"],
                "observer_id": item["observer_id"], "observed_id": item["observed_id"],
                "session_id": item.get("session_id"), "level": "explicit",
                "source_ids": None, "times_derived": 1, "created_at": stamp,
            }
            ws.conclusions[conclusion["id"]] = conclusion
            created.append(conclusion)
        return 201, created

    @route("POST", W + "/conclusions/list")
    def conclusions_list(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        found = [c for c in ws.conclusions.values() if matches(c, call.filters)]
        # Ordered by creation time alone, as the server's SQL is: rows of one batch share
        # it and come back in no fixed order, so pages of a listing overlap and skip.
        self.fake._shuffle.shuffle(found)
        found.sort(key=lambda c: c["created_at"], reverse=not _flag(call.query.get("reverse")))
        return 200, _page(found, call.query)

    @route("POST", W + "/conclusions/query")
    def conclusions_query(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        body = _object(call.body, required=True)
        query = body.get("query")
        if not isinstance(query, str):
            raise invalid(["body", "query"], "Field required", query, "missing")
        found = [c for c in ws.conclusions.values() if matches(c, call.filters)]
        top_k = int(body.get("top_k") or 10)
        return 200, self._rank(found, query, top_k, top_k)

    @route("GET", W + "/conclusions/{conclusion_id}")
    def conclusion_get(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        conclusion = ws.conclusions.get(call.params["conclusion_id"])
        if conclusion is None:
            raise ApiError(404, "Conclusion not found")
        return 200, conclusion

    @route("DELETE", W + "/conclusions/{conclusion_id}")
    def conclusion_delete(self, ws: _Workspace, call: Call) -> tuple[int, Any]:
        if ws.conclusions.pop(call.params["conclusion_id"], None) is None:
            raise ApiError(404, "Conclusion not found")
        return 204, NO_CONTENT


@dataclass(frozen=True)
class _SSE:
    events: list[dict[str, Any]]


class FakeHoncho(LoopbackServer):
    """The server; use as a context manager and pass ``url`` as the SDK's ``base_url``.

    ``require_auth`` (default on) answers 401 to a request without ``Authorization:
    Bearer ...``; ``api_key`` additionally pins the token.
    """

    def __init__(
        self, *, require_auth: bool = True, api_key: str | None = None, version: str = "3.0.12"
    ) -> None:
        self.require_auth = require_auth
        self.api_key = api_key
        self.version = version
        self.requests: list[RecordedRequest] = []
        self.workspaces: dict[str, _Workspace] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: deque[_Fault] = deque()
        self._chat_replies: deque[str | None] = deque()
        self._standing_delay = 0.0
        self._hanging = False
        self._lock = threading.Condition()
        self._wake = threading.Event()
        self._wake.set()
        self._ids = itertools.count(1)
        self._down: _Down | None = None
        self._back = threading.Event()
        self._back.set()
        self._up_timer: threading.Timer | None = None
        # Requests met while down (their paths), and when the last outage ended
        # (time.monotonic).
        self.turned_away_paths: list[str] = []
        self.went_up_at: float | None = None
        # Ties in creation time come back in no fixed order; seeded, so a run repeats.
        self._shuffle = random.Random(7)
        self._api = _Api(self)
        self._serve(self._handler_class())

    def _release_waiters(self) -> None:
        self._wake.set()
        self._back.set()
        if self._up_timer is not None:
            self._up_timer.cancel()

    # -- faults ---------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        count: int = 1,
        *,
        match: str | None = None,
        detail: Any = "Injected fault",
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``count`` requests (whose path contains ``match``) with ``status``.

        ``retry_after`` sets a ``Retry-After`` header, which the SDK's retry loop honours.
        """
        with self._lock:
            self._faults.append(_Fault("fail", count, match, status=status, detail=detail,
                                       retry_after=retry_after))

    def delay_next(self, seconds: float, count: int = 1, *, match: str | None = None) -> None:
        """Hold the next ``count`` requests (whose path contains ``match``) before answering."""
        with self._lock:
            self._faults.append(_Fault("delay", count, match, seconds=seconds))

    def answer_late(self, seconds: float, count: int = 1, *, match: str | None = None) -> None:
        """Do the next ``count`` requests' work at once, then hold the answer (a large
        message that takes Honcho seconds): a client that times out has still written."""
        with self._lock:
            self._faults.append(_Fault("late", count, match, seconds=seconds))

    def delay_all(self, seconds: float) -> None:
        """Hold every request this long (0 to stop)."""
        with self._lock:
            self._standing_delay = seconds

    def hang(self) -> None:
        """From now on, answer nothing until ``release()`` or shutdown."""
        with self._lock:
            self._hanging = True
            self._wake.clear()

    def release(self) -> None:
        """Stop hanging; held requests are then answered normally."""
        with self._lock:
            self._hanging = False
            self._wake.set()

    def reset_after_applying(self, count: int = 1, *, match: str | None = None) -> None:
        """Do the next ``count`` requests' work, then reset the connection unanswered: the
        write landed, the client only sees a dropped connection."""
        with self._lock:
            self._faults.append(_Fault("lost", count, match))

    def down(self, mode: str = "status", *, status: int = 503,
             retry_after: float | None = None) -> None:
        """Be away until ``up()``, the way ``mode`` says (``DOWN_MODES``)."""
        if mode not in DOWN_MODES:
            raise ValueError(f"mode must be one of {DOWN_MODES}")
        with self._lock:
            self._down = _Down(mode, status, retry_after)
            self._back.clear()
        if mode == "refused":
            # Nothing listens on the port: a connect is refused. The port is kept for up().
            self._server.shutdown()
            self._server.server_close()

    def up(self) -> None:
        """Back: answer again (from now, new requests; a hung one was reset)."""
        with self._lock:
            down, self._down = self._down, None
            if down is None:
                return
            if down.mode == "refused":
                self._listen_again()
            self.went_up_at = time.monotonic()
            self._back.set()

    def down_for(self, seconds: float, mode: str = "status", *, status: int = 503,
                 retry_after: float | None = None) -> None:
        """``down(...)`` now and ``up()`` by itself after ``seconds`` (returns at once)."""
        self.down(mode, status=status, retry_after=retry_after)
        self._up_timer = threading.Timer(seconds, self.up)
        self._up_timer.daemon = True
        self._up_timer.start()

    @property
    def is_down(self) -> bool:
        with self._lock:
            return self._down is not None

    def _listen_again(self) -> None:
        host, port = self._server.server_address[:2]
        self._server = QuietServer((str(host), int(port)), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def turned_away(self) -> int:
        with self._lock:
            return len(self.turned_away_paths)

    def _outage(self, request: RecordedRequest) -> _Down | None:
        with self._lock:
            if self._down is not None:
                self.turned_away_paths.append(request.path)
            return self._down

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._standing_delay = 0.0
        self.release()

    def run_deriver(self) -> int:
        """Work off every batch now, as Honcho's deriver does up to 30 minutes after the
        messages came: one conclusion per message still stored, about its sender, in its
        session, made now. Returns how many were made."""
        made = 0
        with self._lock:
            for workspace in self.workspaces.values():
                stored = {m["id"]: m for m in workspace.messages}
                for message_id in workspace.underived:
                    message = stored.get(message_id)
                    if message is None:
                        continue  # its session was deleted meanwhile
                    conclusion = {
                        "id": f"cncl_{next(self._ids):06d}",
                        "content": f"{message['peer_id']} said: {message['content'][:200]}",
                        "observer_id": message["peer_id"], "observed_id": message["peer_id"],
                        "session_id": message["session_id"], "level": "explicit",
                        "source_ids": None, "times_derived": 1, "created_at": _now(),
                    }
                    workspace.conclusions[conclusion["id"]] = conclusion
                    made += 1
                workspace.underived.clear()
        return made

    def run_dreamer(self) -> int:
        """Write each peer's own card from its conclusions, as Honcho's dreamer does, unless
        the workspace turned card creation off. Returns how many cards were written."""
        written = 0
        with self._lock:
            for workspace in self.workspaces.values():
                cards = (workspace.record.get("configuration") or {}).get("peer_card") or {}
                if cards.get("create") is False:
                    continue
                about: dict[str, list[str]] = {}
                for conclusion in workspace.conclusions.values():
                    if conclusion["observer_id"] == conclusion["observed_id"]:
                        about.setdefault(conclusion["observed_id"], []).append(
                            conclusion["content"])
                for peer_id, contents in about.items():
                    workspace.cards[(peer_id, peer_id)] = contents[:3]
                    written += 1
        return written

    def card(self, workspace_id: str, peer_id: str) -> list[str] | None:
        with self._lock:
            return self.workspaces[workspace_id].cards.get((peer_id, peer_id))

    def peer_record(self, workspace_id: str, peer_id: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self.workspaces[workspace_id].peers[peer_id])

    def script_chat(self, *contents: str | None) -> None:
        """Answer the next chats with these contents (None: the SDK then returns None)."""
        with self._lock:
            self._chat_replies.extend(contents)

    # -- inspection -----------------------------------------------------------------

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> list[RecordedRequest]:
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.requests) >= count, timeout_s):
                raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
            return list(self.requests)

    def requests_to(self, path_part: str, method: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [
                r for r in self.requests
                if path_part in r.path and (method is None or r.method == method)
            ]

    def stored_messages(
        self, workspace_id: str, session_id: str | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            return [
                dict(m) for m in self.workspaces[workspace_id].messages
                if session_id is None or m["session_id"] == session_id
            ]

    def stored_conclusions(self, workspace_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self.workspaces[workspace_id].conclusions.values()]

    # -- request handling -----------------------------------------------------------

    def _record(self, request: RecordedRequest) -> _Fault | None:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._lock.notify_all()
            for fault in self._faults:
                if fault.applies_to(request):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
            return None

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _hold(self, fault: _Fault | None) -> bool:
        """Apply delays and hangs; False when the server is shutting down meanwhile."""
        with self._lock:
            seconds = self._standing_delay
            hanging = self._hanging
        if fault is not None and fault.kind == "delay":
            seconds += fault.seconds
        if seconds and self._stopping.wait(seconds):
            return False
        if hanging:
            self._wake.wait()
        return not self._stopping.is_set()

    def _respond(
        self, request: RecordedRequest, fault: _Fault | None
    ) -> tuple[int, Any, dict[str, str]]:
        if fault is not None and fault.kind == "fail":
            headers = {} if fault.retry_after is None else {"retry-after": str(fault.retry_after)}
            return fault.status, {"detail": fault.detail}, headers
        if request.path == "/openapi.json" and request.method == "GET":
            # FastAPI's schema is public; its info.version is the server's release.
            return 200, {"openapi": "3.1.0", "info": {"title": "Honcho API",
                                                      "version": self.version}}, {}
        if self.require_auth:
            token = request.headers.get("authorization", "")
            if not token.startswith("Bearer ") or (
                self.api_key is not None and token != f"Bearer {self.api_key}"
            ):
                return 401, {"detail": "Invalid or missing API key"}, {}
        if isinstance(request.body, str):
            return 422, {"detail": [{"type": "json_invalid", "loc": ["body"],
                                     "msg": "JSON decode error", "input": request.body}]}, {}
        try:
            with self._lock:
                status, payload = self._api.dispatch(request)
                if isinstance(payload, dict | list):
                    payload = copy.deepcopy(payload)  # serialised after the lock is let go
        except ApiError as error:
            return error.status, {"detail": error.detail}, {}
        except Exception as error:  # a bug in the fake: say so rather than drop the line
            return 500, {"detail": f"FakeHoncho failed: {error!r}"}, {}
        return status, payload, {}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})


class _Handler(LoopbackHandler):
    fake: FakeHoncho

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _read(self) -> RecordedRequest:
        raw = self.read_body().decode("utf-8", "replace")
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                body = raw
        parts = urlsplit(self.path)
        return RecordedRequest(
            self.command,
            parts.path,
            dict(parse_qsl(parts.query, keep_blank_values=True)),
            {k.lower(): v for k, v in self.headers.items()},
            body,
            time.monotonic(),
        )

    def _handle(self) -> None:
        request = self._read()
        down = self.fake._outage(request)
        if down is not None:
            self._away(down)
            return
        fault = self.fake._record(request)
        try:
            if not self.fake._hold(fault):
                self.close_connection = True
                return
            status, payload, headers = self.fake._respond(request, fault)
            if fault is not None and fault.kind == "late" and self.fake._stopping.wait(
                fault.seconds
            ):
                return
            if fault is not None and fault.kind == "lost":
                self._reset()
                return
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer
        finally:
            self.fake._done()

    def _away(self, down: _Down) -> None:
        try:
            if down.mode == "status":
                headers = ({} if down.retry_after is None
                           else {"retry-after": f"{down.retry_after:g}"})
                self._send(down.status, {"detail": "Service Unavailable"}, headers)
                return
            if down.mode == "hang":
                self.fake._back.wait()  # until up() or the server stops: then dropped
            # "reset", "hang", and a keep-alive connection open when the port closed.
            self._reset()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _reset(self) -> None:
        """Drop the connection with a TCP reset, unanswered."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        if payload is NO_CONTENT:
            data, content_type = b"", None
        elif isinstance(payload, _SSE):
            text = "".join(f"data: {json.dumps(event)}\n\n" for event in payload.events)
            data, content_type = text.encode(), "text/event-stream"
        else:
            data, content_type = json.dumps(payload).encode(), "application/json"
        self.send_body(status, data, content_type, headers)
