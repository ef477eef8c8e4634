"""The Honcho backend (honcho-ai 2.7): one workspace per Slack workspace, a peer per person.

Mapping: workspace = ``HONCHO_WORKSPACE_ID`` or the Slack team id; a peer per
person (their Slack user id) and one for the agent; a Honcho session per Thoth
session. Ids pass through ``honcho_id`` (Honcho allows only ``[a-zA-Z0-9_-]``).
Clients are built by the composition root with ``max_retries=0``: retries belong
to the ingest queue, and the user model runs under the pipeline's hard deadline.
The SDK's ``.aio`` views keep every call off the event loop's critical path.

Where facts were said (``scope.py``) maps onto Honcho's sessions: a conclusion
carries only its session as a place (Honcho has no metadata on conclusions), so a
user model asks for the representation with ``sessions=[...]`` — Honcho's session
allowlist (server 3.0.12 and later; at most 1 000 sessions, an empty list is not
sent: nothing may be read) — listing the Thoth sessions the person spoke in that
the reader may read. Listed facts are filtered by their session on Thoth's side.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, Protocol

from layers.episodic.episode import Viewer
from layers.identity.ids import honcho_id
from layers.identity.protocol import Fact, Person, TurnMessages
from layers.identity.scope import unplaced_visible
from layers.redaction import redact

AGENT_PEER = "thoth"
MAX_MESSAGE_CHARS = 25_000
MAX_CONCLUSIONS = 10
# A user-model search query longer than this adds cost and no precision.
MAX_QUERY_CHARS = 500
FACTS_PAGE_SIZE = 100
MAX_PAGES = 50
# Honcho's session allowlist takes at most this many sessions.
MAX_SESSIONS = 1_000

ClientFactory = Callable[[str], Any]


class SessionsReadable(Protocol):
    """Ids of the sessions ``person`` spoke in whose facts ``viewer`` may read."""

    def __call__(self, person: Person, viewer: Viewer, *, limit: int) -> list[str]: ...


class HonchoIdentity:
    name = "honcho"

    def __init__(
        self,
        client_for_workspace: ClientFactory,
        *,
        workspace_id: str | None,
        readable_sessions: SessionsReadable,
    ) -> None:
        self._client_for_workspace = client_for_workspace
        self._workspace_id = workspace_id
        self._readable_sessions = readable_sessions
        self._clients: dict[str, Any] = {}
        self._objects: dict[tuple[int, str, str], Any] = {}
        self._lock = threading.Lock()

    async def ingest(self, turn: TurnMessages) -> None:
        person = await self._person(turn.person)
        agent = await self._peer(turn.person.team, AGENT_PEER)
        session = await self._session(turn.person.team, honcho_id(turn.session_id))
        await session.aio.add_messages(
            [
                person.message(_clip(redact(turn.user_text))),
                agent.message(_clip(redact(turn.reply_text))),
            ]
        )

    async def user_model(self, person: Person, message: str, viewer: Viewer) -> str | None:
        sessions = await asyncio.to_thread(
            self._readable_sessions, person, viewer, limit=MAX_SESSIONS
        )
        if not sessions:
            return None  # nothing said anywhere this reader may read
        peer = await self._person(person)
        # The representation is cheap (no LLM on Honcho's side), unlike peer.chat.
        text = await peer.aio.representation(
            search_query=redact(message)[:MAX_QUERY_CHARS] or None,
            max_conclusions=MAX_CONCLUSIONS,
            sessions=[honcho_id(session) for session in sessions],
        )
        return str(text).strip() or None

    async def observe(
        self, person: Person, observations: list[str], *, session_id: str | None, source: str
    ) -> None:
        session = honcho_id(session_id) if session_id else None
        if session is not None:
            # Honcho refuses a conclusion that names a session it does not know.
            await self._session(person.team, session)
        items = [
            {"content": redact(text).strip(), "session_id": session}
            for text in observations
            if text.strip()
        ]
        if items:
            peer = await self._person(person)
            await peer.conclusions.aio.create(items)

    async def facts(self, person: Person, viewer: Viewer | None = None) -> list[Fact]:
        peer = await self._person(person)
        facts: list[Fact] = []
        for number in range(1, MAX_PAGES + 1):
            page = _items(await peer.conclusions.aio.list(page=number, size=FACTS_PAGE_SIZE))
            facts.extend(_fact(item) for item in page)
            if len(page) < FACTS_PAGE_SIZE:
                break
        if viewer is None:
            return facts
        readable = {
            honcho_id(session)
            for session in await asyncio.to_thread(
                self._readable_sessions, person, viewer, limit=MAX_SESSIONS
            )
        }
        unplaced = unplaced_visible(viewer, person)
        return [
            fact for fact in facts
            if (fact.session_id in readable) or (fact.session_id is None and unplaced)
        ]

    async def forget(self, person: Person, fact_id: str | None = None) -> int:
        # Deleting a conclusion is a workspace-wide call: only ids of this person's own
        # conclusions are ever passed to it.
        peer = await self._person(person)
        own = [fact.id for fact in await self.facts(person)]
        ids = own if fact_id is None else [fact_id] if fact_id in own else []
        for conclusion_id in ids:
            await peer.conclusions.aio.delete(conclusion_id)
        return len(ids)

    async def check(self) -> str:
        await self._peer(self._workspace_id or "doctor", AGENT_PEER)
        return f"Honcho backend, workspace {self._workspace_id or 'per Slack workspace'}"

    async def _person(self, person: Person) -> Any:
        # The team is part of the id: with a fixed HONCHO_WORKSPACE_ID two workspaces' U1
        # are different people, and no person can share the agent's peer.
        return await self._peer(person.team, person_peer_id(person))

    async def _peer(self, team: str, peer_id: str) -> Any:
        # Getting a peer or a session is a request (get-or-create); each is made once.
        client = self._client(team)
        key = (id(client), "peer", peer_id)
        if key not in self._objects:
            self._objects[key] = await client.aio.peer(peer_id)
        return self._objects[key]

    async def _session(self, team: str, session_id: str) -> Any:
        client = self._client(team)
        key = (id(client), "session", session_id)
        if key not in self._objects:
            self._objects[key] = await client.aio.session(session_id)
        return self._objects[key]

    def _client(self, team: str) -> Any:
        workspace = self._workspace_id or honcho_id(team)
        with self._lock:
            client = self._clients.get(workspace)
            if client is None:
                client = self._clients[workspace] = self._client_for_workspace(workspace)
            return client


def person_peer_id(person: Person) -> str:
    return honcho_id("person", person.team, person.user)


def _clip(text: str) -> str:
    # Honcho refuses a message over 25 000 characters; keep the start, say it was cut.
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    marker = " […]"
    return text[: MAX_MESSAGE_CHARS - len(marker)] + marker


def _items(page: Any) -> list[Any]:
    items = getattr(page, "items", None)
    return list(items) if items is not None else list(page)


def _fact(conclusion: Any) -> Fact:
    created = getattr(conclusion, "created_at", None)
    at = created.timestamp() if created is not None and hasattr(created, "timestamp") else 0.0
    session = getattr(conclusion, "session_id", None)
    return Fact(
        str(conclusion.id), str(conclusion.content), at, "honcho",
        None if session is None else str(session),
    )
