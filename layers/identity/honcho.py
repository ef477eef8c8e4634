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
import contextlib
import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ParamSpec, Protocol, TypeVar

from layers.identity.availability import PROBE_EVERY_S, Availability
from layers.identity.conversations import TheirConversations
from layers.identity.honcho_server import SCOPING_VERSION, answers, key_accepted, server_version
from layers.identity.ids import honcho_id
from layers.identity.ingest_queue import described
from layers.identity.protocol import Fact, Forgotten, Person, TurnMessages
from layers.identity.scope import unplaced_visible
from layers.shared.dependency_health import HONCHO, DependencyHealth
from layers.shared.errors import BackendUnavailable
from layers.shared.places import Viewer
from layers.shared.redaction import redact

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _honcho_failures_are_backend_errors(
    method: Callable[_P, Coroutine[Any, Any, _R]],
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """What the command line calls (people show/forget) fails in one line, not the SDK's
    traceback, when Honcho cannot be reached or refuses."""

    @functools.wraps(method)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        from honcho.http.exceptions import HonchoError

        try:
            return await method(*args, **kwargs)
        except HonchoError as error:
            raise BackendUnavailable(
                f"Honcho failed ({type(error).__name__}: {error}): check HONCHO_URL and"
                " that the server is up (thoth doctor checks it)"
            ) from error

    return wrapper


AGENT_PEER = "thoth"
TURN_KEY = "thoth_turn"
MAX_MESSAGE_CHARS = 25_000
MAX_CONCLUSIONS = 10
# A user-model search query longer than this adds cost and no precision.
MAX_QUERY_CHARS = 500
FACTS_PAGE_SIZE = 100
# 5 000 facts about one person: far past any real one; a bound, not a target.
MAX_PAGES = 50
MAX_FORGET_ROUNDS = 10
# People whose known facts are kept in memory for deduplication (least recent go first).
MAX_PEOPLE_CACHED = 1_000
# Honcho's deriver batches a conversation's messages for up to 30 minutes: facts drawn
# later from words said before a forget are swept after this long (tombstones.py).
DEFAULT_SETTLE_S = 35 * 60.0
# Honcho's limits on POST /conclusions: 100 a call, 65 535 characters and 8 192 tokens
# each (its embedding model's input). Tokens are counted by a tokenizer Thoth does not
# have; a byte-pair tokenizer never makes more tokens than UTF-8 bytes, so a conclusion
# cut to this many bytes is within the limit whatever its script (CJK and emoji run two
# to four bytes a character, and as many tokens). A fact longer is not a fact anyway.
MAX_CONCLUSIONS_PER_CALL = 100
MAX_CONCLUSION_BYTES = 8_000
# Honcho's session allowlist takes at most this many sessions.
MAX_SESSIONS = 1_000
# A probe while Honcho is away waits this long for an answer: one that hangs is away too.
PROBE_TIMEOUT_S = 2.0

ClientFactory = Callable[[str], Any]


class Unswept(Protocol):
    """The person's forget whose sweep has not run yet (``Tombstones.unswept``)."""

    def __call__(self, person: Person) -> Any: ...


@dataclass
class _Known:
    """A person's facts as last listed: ids to normalized text, and the newest creation
    time with the ids made at it (where the next listing starts)."""

    texts: dict[str, str] = field(default_factory=dict)
    newest: datetime | None = None
    at_newest: set[str] = field(default_factory=set)

    def add(self, facts: list[tuple[Fact, datetime]]) -> None:
        for fact, created in facts:
            self.texts[fact.id] = _normalized(fact.text)
            if self.newest is None or created > self.newest:
                self.newest, self.at_newest = created, set()
            if created == self.newest:
                self.at_newest.add(fact.id)


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
        server_url: str,
        conversations_of: Callable[[Person], TheirConversations] | None = None,
        dialectic: bool = False,
        check_timeout_s: float = 5.0,
        api_key: str | None = None,
        unswept: Unswept | None = None,
        settle_s: float = DEFAULT_SETTLE_S,
        health: DependencyHealth | None = None,
        probe_every_s: float = PROBE_EVERY_S,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        """``unswept``: a forget whose sweep is still to come; facts made since are late
        (drawn from before the forget) and are deleted where a read meets them.
        ``health``: the process's registry, told when Honcho fails and when it is back
        (``availability.py``: turns then skip the user model, the outbox waits for a probe)."""
        self.settle_s = settle_s
        self._probe_timeout_s = probe_timeout_s
        self.availability = Availability(
            HONCHO, health or DependencyHealth(), self._probe, probe_every_s=probe_every_s)
        self._api_key = api_key
        self._unswept = unswept
        self._known: dict[str, _Known] = {}
        self._client_for_workspace = client_for_workspace
        self._workspace_id = workspace_id
        self._server_url = server_url
        self._check_timeout_s = check_timeout_s
        self._readable_sessions = readable_sessions
        self._conversations_of = conversations_of
        self._dialectic = dialectic
        self._cards_off: set[int] = set()
        self._clients: dict[str, Any] = {}
        self._objects: dict[tuple[int, str, str], Any] = {}
        self._lock = threading.Lock()

    async def ingest(self, turn: TurnMessages) -> None:
        with self._watched():
            await self._ingest(turn)

    async def _ingest(self, turn: TurnMessages) -> None:
        person = await self._person(turn.person)
        agent = await self._agent(turn.person.team)
        session = await self._session(turn.person.team, honcho_id(turn.session_id))
        key = turn_key(turn)
        if turn.retry and await _holds(session, key):
            return  # the timed-out try was stored after all
        # The turn's own time, not the arrival's: a retried ingest lands minutes later.
        said_at = datetime.fromtimestamp(turn.at, UTC) if turn.at else None
        marked = {TURN_KEY: key}
        await session.aio.add_messages(
            [
                person.message(
                    _clip(redact(turn.user_text)), created_at=said_at, metadata=marked
                ),
                agent.message(
                    _clip(redact(turn.reply_text)), created_at=said_at, metadata=marked
                ),
            ]
        )

    async def user_model(self, person: Person, message: str, viewer: Viewer) -> str | None:
        # One trip to the database on the turn's path: both questions in one thread.
        unswept, sessions = await asyncio.to_thread(self._model_inputs, person, viewer)
        if unswept:
            # Nothing was sent about them since the forget: whatever Honcho holds is late.
            return None
        if not sessions:
            return None  # nothing said anywhere this reader may read
        if not self.availability.may_try():
            # Known to be away: this turn goes on without it at once, not after the
            # user model's whole deadline (one turn in a while asks, as the probe).
            return None
        try:
            with self._watched():
                return await self._asked_model(person, message, sessions)
        except Exception as error:
            if outage(error):
                return None  # said once, by the health registry; not a traceback a turn
            raise

    async def _asked_model(self, person: Person, message: str, sessions: list[str]) -> str | None:
        peer = await self._person(person)
        allowed = [honcho_id(session) for session in sessions]
        query = redact(message)[:MAX_QUERY_CHARS]
        if self._dialectic and query.strip():
            await self._no_peer_cards(person.team)
            # An LLM call on Honcho's side: seconds and tokens, under the same deadline.
            text = await peer.aio.chat(
                f"What should I know about this person to answer them now? {query}",
                sessions=allowed,
                reasoning_level="minimal",
            )
        else:
            # The representation is cheap (no LLM on Honcho's side), unlike peer.chat.
            text = await peer.aio.representation(
                search_query=query or None, max_conclusions=MAX_CONCLUSIONS, sessions=allowed
            )
        if text is None:
            return None
        return _with_name(str(text), person).strip() or None

    async def observe(
        self, person: Person, observations: list[str], *, session_id: str | None, source: str
    ) -> list[str]:
        with self._watched():
            return await self._observe(person, observations, session_id)

    async def _observe(
        self, person: Person, observations: list[str], session_id: str | None
    ) -> list[str]:
        session = honcho_id(session_id) if session_id else None
        if session is not None:
            # Honcho refuses a conclusion that names a session it does not know.
            await self._session(person.team, session)
        peer = await self._person(person)
        # Honcho stores the same conclusion twice if asked twice: known ones are skipped.
        known = await self._known_texts(person, peer)
        items: list[dict[str, Any]] = []
        for text in observations:
            content = _clip_bytes(redact(text).strip(), MAX_CONCLUSION_BYTES)
            if content and _normalized(content) not in known:
                known.add(_normalized(content))
                items.append({"content": content, "session_id": session})
        if not items:
            return []
        created = await self._create_conclusions(peer, items)
        self._cache(person).add(created)
        return [fact.id for fact, _ in created]

    async def _known_texts(self, person: Person, peer: Any) -> set[str]:
        """The normalized texts of the person's facts: those cached, and those made since
        the last listing (usually one request). A fact deleted by another process stays
        in the cache: its text is not written again until this process lists afresh."""
        known = self._cache(person)
        known.add(await self._listing(peer, since=known.newest, seen_at_since=known.at_newest))
        return set(known.texts.values())

    def _cache(self, person: Person) -> _Known:
        known = self._known.pop(person.key, None) or _Known()
        self._known[person.key] = known  # the most recent last
        while len(self._known) > MAX_PEOPLE_CACHED:
            self._known.pop(next(iter(self._known)))
        return known

    async def _create_conclusions(
        self, peer: Any, items: list[dict[str, Any]]
    ) -> list[tuple[Fact, datetime]]:
        """At most 100 a call (Honcho's limit); a refused batch goes one by one, so one
        bad item never loses the rest. Returns what Honcho says it made."""
        from honcho.http.exceptions import UnprocessableEntityError

        made: list[Any] = []
        for start in range(0, len(items), MAX_CONCLUSIONS_PER_CALL):
            batch = items[start : start + MAX_CONCLUSIONS_PER_CALL]
            try:
                made += await peer.conclusions.aio.create(batch)
            except UnprocessableEntityError:
                for item in batch:
                    try:
                        made += await peer.conclusions.aio.create([item])
                    except UnprocessableEntityError as error:
                        log.warning("Honcho refused one conclusion (%d chars): %s",
                                    len(item["content"]), described(error))
        return [(_fact(item), item.created_at) for item in made]

    @_honcho_failures_are_backend_errors
    async def facts(self, person: Person, viewer: Viewer | None = None) -> list[Fact]:
        peer = await self._person(person)
        listed = await self._listing(peer)
        self._known.pop(person.key, None)
        self._cache(person).add(listed)
        listed = await self._without_late(person, peer, listed)
        facts = sorted((_named(fact, person) for fact, _ in listed), key=lambda f: f.at)
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

    @_honcho_failures_are_backend_errors
    async def forget_person(self, person: Person) -> Forgotten:
        """Every conclusion, the sessions of conversations they had alone with the agent
        (a session's deletion takes its messages with it), their peer card and the
        peer's metadata (their name and Slack ids). Honcho deletes neither one person's
        messages from a shared session nor a peer: those messages are counted, not
        hidden, and the peer stays, an id with nothing attached."""
        # Named by id alone: a get-or-create with metadata would write their name back.
        peer = await self._peer(person.team, person_peer_id(person))
        deleted, shared = 0, 0
        if self._conversations_of is not None:
            theirs = await asyncio.to_thread(self._conversations_of, person)
            shared = len(theirs.shared)
            # First: a session's deletion takes its facts with it, one request for many.
            deleted = await self._delete_sessions(person.team, theirs.alone)
        facts = await self._delete_all(person, peer)
        await self._wipe_peer(peer)
        return Forgotten(facts, deleted, shared, self.settle_s)

    @_honcho_failures_are_backend_errors
    async def forget_conversations(self, team: str, session_ids: Sequence[str]) -> int:
        """Each session deleted takes its messages, and the conclusions drawn from them."""
        return await self._delete_sessions(team, session_ids)

    async def _delete_sessions(self, team: str, session_ids: Sequence[str]) -> int:
        from honcho.http.exceptions import NotFoundError
        from honcho.session import Session

        client = self._client(team)
        deleted = 0
        for session_id in session_ids:
            # A Session object alone makes no request: a get-or-create would first make a
            # session that was never sent, only to delete it.
            with contextlib.suppress(NotFoundError):
                await Session(honcho_id(session_id), client).aio.delete()
                deleted += 1
            self._objects.pop((id(client), "session", honcho_id(session_id)), None)
        return deleted

    @_honcho_failures_are_backend_errors
    async def sweep(self, person: Person, since: float) -> int:
        """Delete the facts about ``person`` Honcho made after ``since`` (their forget),
        and the peer card its dreamer may have built from them."""
        peer = await self._peer(person.team, person_peer_id(person))
        late = await self._listing(peer, since=datetime.fromtimestamp(since, UTC))
        deleted = await self._delete(person, peer, [fact.id for fact, _ in late])
        await self._wipe_peer(peer)
        return deleted

    async def _wipe_peer(self, peer: Any) -> None:
        # Honcho replaces a peer's metadata whole, and an empty card is no card.
        await peer.aio.set_card([])
        await peer.aio.set_metadata({})

    def _model_inputs(self, person: Person, viewer: Viewer) -> tuple[bool, list[str]]:
        """Whether a forget of ``person`` is still to be swept, and the sessions the
        reader may read (both database reads: run in a thread)."""
        if self._unswept is not None and self._unswept(person) is not None:
            return True, []
        return False, self._readable_sessions(person, viewer, limit=MAX_SESSIONS)

    async def _forget_unswept(self, person: Person) -> float | None:
        """When the person asked to be forgotten, while that forget's sweep is to come."""
        if self._unswept is None:
            return None
        stone = await asyncio.to_thread(self._unswept, person)
        return None if stone is None else float(stone.forgotten_at)

    async def _without_late(
        self, person: Person, peer: Any, listed: list[tuple[Fact, datetime]]
    ) -> list[tuple[Fact, datetime]]:
        """Facts made after an unswept forget are drawn from before it: a read that
        meets them deletes them (the sweep would, later)."""
        forgotten_at = await self._forget_unswept(person)
        if forgotten_at is None:
            return listed
        late = {fact.id for fact, created in listed if created.timestamp() > forgotten_at}
        if late:
            await self._delete(person, peer, sorted(late))
        return [(fact, created) for fact, created in listed if fact.id not in late]

    async def _listing(
        self, peer: Any, *, since: datetime | None = None, seen_at_since: set[str] | None = None
    ) -> list[tuple[Fact, datetime]]:
        """Every conclusion about ``peer`` (made at or after ``since``, less the ids
        ``seen_at_since`` made at that very time), each once, with its creation time.

        Honcho orders a listing by creation time alone, and a batch shares one, so
        numbered pages overlap and skip. Pages are read by a stable key instead: each
        asks for what is no newer than the oldest fact read so far, leaving out the ids
        already read at that time.
        """
        floor: list[dict[str, Any]] = []
        if since is not None:
            floor.append({"created_at": {"gte": since.isoformat()}})
            if seen_at_since:
                floor.append({"NOT": [{"id": {"in": sorted(seen_at_since)}}]})
        found: dict[str, tuple[Fact, datetime]] = {}
        edge: datetime | None = None
        at_edge: set[str] = set()
        for _ in range(MAX_PAGES):
            conditions = list(floor)
            if edge is not None:
                conditions.append({"created_at": {"lte": edge.isoformat()}})
                conditions.append({"NOT": [{"id": {"in": sorted(at_edge)}}]})
            page = await peer.conclusions.aio.list(
                page=1, size=FACTS_PAGE_SIZE,
                filters={"AND": conditions} if conditions else None,
            )
            items = _items(page)
            for item in items:
                found[str(item.id)] = (_fact(item), item.created_at)
            if len(items) < FACTS_PAGE_SIZE:
                break
            oldest = min(item.created_at for item in items)
            if oldest != edge:
                edge, at_edge = oldest, set()
            at_edge |= {str(item.id) for item in items if item.created_at == oldest}
        return list(found.values())

    @_honcho_failures_are_backend_errors
    async def forget(self, person: Person, fact_id: str | None = None) -> int:
        """Delete one fact (if it is the person's) or all of them."""
        from honcho.http.exceptions import NotFoundError

        peer = await self._peer(person.team, person_peer_id(person))
        if fact_id is None:
            return await self._delete_all(person, peer)
        try:
            # Deleting a conclusion is a workspace-wide call: the view's get confirms
            # the id is about this person (a 404 otherwise) before it is passed on.
            await peer.conclusions.aio.get(fact_id)
        except NotFoundError:
            return 0
        return await self._delete(person, peer, [fact_id])

    async def _delete_all(self, person: Person, peer: Any) -> int:
        """Every fact, listed again until none is left (one made meanwhile goes too)."""
        deleted = 0
        for _ in range(MAX_FORGET_ROUNDS):
            ids = [fact.id for fact, _ in await self._listing(peer)]
            if not ids:
                break
            deleted += await self._delete(person, peer, ids)
        self._known.pop(person.key, None)
        return deleted

    async def _delete(self, person: Person, peer: Any, ids: list[str]) -> int:
        """Delete conclusions of the person's own listing; a 404 (gone meanwhile) is fine."""
        from honcho.http.exceptions import NotFoundError

        known = self._known.get(person.key)
        for conclusion_id in ids:
            with contextlib.suppress(NotFoundError):
                await peer.conclusions.aio.delete(conclusion_id)
            if known is not None:
                known.texts.pop(conclusion_id, None)
        return len(ids)

    async def warm_up(self, team: str) -> None:
        """The workspace, the agent's peer and a pooled connection, before the first turn:
        Honcho's first lookup takes seconds, past the user model's deadline."""
        await self._agent(team)
        if self._dialectic:
            await self._no_peer_cards(team)

    async def _no_peer_cards(self, team: str) -> None:
        """The dialectic puts the person's peer card, built from every session, into its
        prompt whatever the allowlist: with the dialectic, the workspace uses no cards."""
        from honcho.api_types import PeerCardConfiguration

        client = self._client(team)
        if id(client) in self._cards_off:
            return
        configuration = await client.aio.get_configuration()
        if configuration.peer_card is None or configuration.peer_card.use is not False:
            configuration.peer_card = PeerCardConfiguration(use=False, create=False)
            await client.aio.set_configuration(configuration)
        self._cards_off.add(id(client))

    @contextlib.contextmanager
    def _watched(self) -> Iterator[None]:
        """Tell ``availability`` how a call to Honcho went: failing on an outage's error
        (not on a refusal, which is the request's), working on an answer. A cancelled call
        (the user model's deadline) says nothing either way."""
        try:
            yield
        except Exception as error:
            if outage(error):
                self.availability.failed(described(error))
            raise
        self.availability.worked()

    async def _probe(self) -> None:
        await answers(self._server_url, self._api_key, self._workspace_id,
                      timeout_s=self._probe_timeout_s)

    async def check(self) -> str:
        """Read the server's version and make one authenticated read, writing nothing (no
        workspace or peer is created)."""
        version = await server_version(self._server_url, timeout_s=self._check_timeout_s)
        await key_accepted(self._server_url, self._api_key, self._workspace_id,
                           timeout_s=self._check_timeout_s)
        shown = ".".join(str(part) for part in version)
        if version < SCOPING_VERSION:
            raise BackendUnavailable(
                f"Honcho {shown} ignores session allowlists, so identity facts would not stay"
                " where they were said: upgrade the Honcho server to 3.0.12 or later"
            )
        workspace = self._workspace_id or "one per Slack workspace"
        return f"Honcho backend {shown} at {self._server_url}, workspace {workspace}"

    async def _person(self, person: Person) -> Any:
        # The team is part of the id: with a fixed HONCHO_WORKSPACE_ID two workspaces' U1
        # are different people, and no person can share the agent's peer. The name rides
        # in the peer's metadata, for whoever reads Honcho's own views. Honcho replaces
        # metadata whole: without a name (a command naming a person by id) none is sent,
        # so the stored name is never written over with a null.
        if person.name is None:
            return await self._peer(person.team, person_peer_id(person))
        metadata = {"name": person.name, "slack_user": person.user, "slack_team": person.team}
        return await self._peer(person.team, person_peer_id(person), metadata=metadata)

    async def _agent(self, team: str) -> Any:
        from honcho.api_types import PeerConfig

        # Only people are modelled: the deriver's work on the agent's words is waste.
        return await self._peer(team, AGENT_PEER, configuration=PeerConfig(observe_me=False))

    async def _peer(self, team: str, peer_id: str, **options: Any) -> Any:
        # Getting a peer or a session is a request (get-or-create); each is made once.
        client = self._client(team)
        key = (id(client), "peer", peer_id)
        if key not in self._objects:
            self._objects[key] = await client.aio.peer(peer_id, **options)
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


def outage(error: BaseException) -> bool:
    """An error Honcho will get over: unreachable, reset, timed out, 5xx, 408 or 429."""
    import httpx
    from honcho.http import exceptions as honcho_errors

    if isinstance(error, honcho_errors.ConnectionError | honcho_errors.TimeoutError
                  | honcho_errors.RateLimitError | honcho_errors.ServerError
                  | httpx.TransportError):
        return True
    return isinstance(error, honcho_errors.HonchoError) and (
        error.status >= 500 or error.status == 408)


def turn_key(turn: TurnMessages) -> str:
    """A turn's stable id, in its messages' metadata, so a retry can tell it is stored."""
    seed = f"{turn.session_id}\n{turn.at!r}\n{turn.user_text}"
    return hashlib.sha256(seed.encode()).hexdigest()[:24]


async def _holds(session: Any, key: str) -> bool:
    page = await session.aio.messages(filters={"metadata": {TURN_KEY: key}}, size=1)
    return bool(_items(page))


def person_peer_id(person: Person) -> str:
    return honcho_id("person", person.team, person.user)


def _with_name(text: str, person: Person) -> str:
    """Honcho writes the peer's id into its text ("person_3a-T1_3a-U1 prefers…"); the model
    and people read the person's name."""
    return text.replace(person_peer_id(person), person.name or person.user)


def _named(fact: Fact, person: Person) -> Fact:
    return replace(fact, text=_with_name(fact.text, person))


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    # Honcho refuses a message over 25 000 characters (a conclusion over 65 535); keep
    # the start and say it was cut.
    if len(text) <= limit:
        return text
    marker = " […]"
    return text[: limit - len(marker)] + marker


def _clip_bytes(text: str, limit: int) -> str:
    """The start of ``text`` within ``limit`` UTF-8 bytes (never half a character), and a
    mark that it was cut."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    marker = " […]"
    kept = encoded[: limit - len(marker.encode("utf-8"))].decode("utf-8", errors="ignore")
    return kept + marker


def _normalized(text: str) -> str:
    return " ".join(text.lower().split())


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
