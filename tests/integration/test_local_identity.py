"""The local identity backend on each engine (a real SQLite file, a real PostgreSQL) and
the real MiniLM model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import pytest

from layers.identity.ingest_queue import IngestQueue
from layers.identity.local.backend import LocalIdentity
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Fact, Person, TurnMessages
from layers.identity.tables import SCHEMA as IDENTITY
from layers.identity.user_models import UserModels
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from layers.working.tables import SCHEMA as WORKING

DANA = Person("T1", "U1", "Dana")
# A DM with Dana: facts of sessions the store does not know count as said there.
DANA_DM = Viewer("T1", "D1", "im", "U1")
pytestmark = pytest.mark.model


OpenDatabase = Callable[[Sequence[Schema]], Database]


def _identity(
    open_database: OpenDatabase, minilm: MiniLMEmbedder, now: list[float]
) -> LocalIdentity:
    # The local backend's tables and the sessions its visibility joins, on each engine.
    db = open_database([WORKING, IDENTITY])
    return LocalIdentity(db, minilm, clock=lambda: now[0])


def _said(text: str, reply: str = "Noted.") -> TurnMessages:
    return TurnMessages(DANA, "s1", text, reply, 0.0)


async def _facts(identity: LocalIdentity) -> list[str]:
    return [fact.text for fact in await identity.facts(DANA)]


def test_a_newer_statement_supersedes_the_older_one(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    now = [1_790_000_000.0]
    identity = _identity(open_database, minilm, now)

    async def run() -> list[str]:
        await identity.ingest(_said("I prefer bullet points. My timezone is CET."))
        now[0] += 86_400
        await identity.ingest(_said("Actually, I don't like bullet points. My timezone is PST."))
        return await _facts(identity)

    assert asyncio.run(run()) == ["does not like bullet points", "their timezone is PST"]
    history = identity.store.history(DANA)
    superseded = {text for _, text, by in history if by is not None}
    assert superseded == {"prefers bullet points", "their timezone is CET"}


def test_the_agents_words_never_become_facts_about_the_user(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])
    reply = "I see you prefer long answers, and your timezone is UTC. I'm a big fan of tea."
    asyncio.run(identity.ingest(_said("Can you help me plan the release?", reply)))
    assert asyncio.run(_facts(identity)) == []


def test_repeats_and_paraphrases_are_stored_once(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])

    async def run() -> list[str]:
        await identity.ingest(_said("I prefer short answers."))
        await identity.ingest(_said("I prefer short answers!"))
        await identity.observe(DANA, ["Dana leads the payments team"], session_id=None,
                               source="reflection")
        await identity.observe(DANA, ["Dana is the lead of the payments team"], session_id=None,
                               source="reflection")
        return await _facts(identity)

    assert asyncio.run(run()) == ["prefers short answers", "Dana leads the payments team"]


def test_the_user_model_is_the_few_most_relevant_observations(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])
    statements = [
        "My timezone is CET.", "I prefer short answers.", "I work on the billing service.",
        "I love hiking.", "I can't attend meetings on Fridays.", "My dog is called Rex.",
        "I'm based in Lisbon.",
    ]

    async def run() -> str | None:
        for statement in statements:
            await identity.ingest(_said(statement))
        return await identity.user_model(
            DANA, "When can we schedule the billing review meeting?", DANA_DM
        )

    model = asyncio.run(run())
    assert model is not None
    lines = model.splitlines()
    assert len(lines) == 5
    assert any("billing service" in line for line in lines)
    assert any("Fridays" in line for line in lines)
    assert all(line.startswith("- Dana ") for line in lines)


def test_forget_one_fact_or_everything(open_database: OpenDatabase, minilm: MiniLMEmbedder) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])

    async def run() -> tuple[list[Fact], int, list[str], int, list[str]]:
        await identity.ingest(_said("I prefer tea. My timezone is CET."))
        facts = await identity.facts(DANA)
        one = await identity.forget(DANA, facts[0].id)
        after_one = await _facts(identity)
        rest = await identity.forget(DANA)
        return facts, one, after_one, rest, await _facts(identity)

    facts, one, after_one, rest, after_all = asyncio.run(run())
    assert len(facts) == 2 and one == 1 and after_one == ["their timezone is CET"]
    assert rest == 1 and after_all == []


def test_secrets_never_become_observations(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])
    token = "xoxp-123456789012-123456789012-123456789012-abcdefabcdefabcdefabcdefabcdef12"
    asyncio.run(identity.ingest(_said(f"My slack token is {token}. My password is hunter2.")))
    asyncio.run(identity.ingest(_said(f"I prefer pasting {token} into every reply")))
    facts = asyncio.run(_facts(identity))
    assert all(token not in fact and "hunter2" not in fact for fact in facts)
    assert facts == ["prefers pasting [REDACTED:slack-token] into every reply"] or all(
        "REDACTED" in fact for fact in facts
    )


def test_a_negation_or_another_day_is_not_a_duplicate(
    open_database: OpenDatabase, minilm: MiniLMEmbedder
) -> None:
    identity = _identity(open_database, minilm, [1_790_000_000.0])

    async def run() -> list[str]:
        await identity.observe(DANA, ["Dana is vegetarian"], session_id=None, source="x")
        await identity.observe(DANA, ["Dana is not vegetarian"], session_id=None, source="x")
        await identity.observe(DANA, ["deploy freeze on Friday"], session_id=None, source="x")
        await identity.observe(DANA, ["deploy freeze on Monday"], session_id=None, source="x")
        return await _facts(identity)

    assert len(asyncio.run(run())) == 4


class FlakyBackend:
    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.received: list[TurnMessages] = []

    async def ingest(self, turn: TurnMessages) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("backend down")
        self.received.append(turn)


def test_the_ingest_queue_retries_and_counts_what_it_could_not_send() -> None:
    async def run(failures: int) -> tuple[int, FlakyBackend, IngestQueue]:
        backend = FlakyBackend(failures)
        queue = IngestQueue(backend, attempts=3, base_delay_s=0.001)  # type: ignore[arg-type]
        queue.submit(_said("one"))
        queue.submit(_said("two"))
        return await queue.drain(5), backend, queue

    unsent, backend, queue = asyncio.run(run(2))
    assert unsent == 0 and [t.user_text for t in backend.received] == ["one", "two"]
    unsent, backend, queue = asyncio.run(run(100))
    assert unsent == 2 and queue.stats.failed == 2 and backend.received == []


def test_a_full_queue_drops_the_oldest_turn() -> None:
    async def run() -> tuple[int, IngestQueue, FlakyBackend]:
        backend = FlakyBackend(0)
        queue = IngestQueue(backend, capacity=2)  # type: ignore[arg-type]
        for text in ("a", "b", "c"):
            queue.submit(_said(text))
        return await queue.drain(5), queue, backend

    unsent, queue, backend = asyncio.run(run())
    assert queue.stats.dropped == 1 and unsent == 1
    assert [t.user_text for t in backend.received] == ["b", "c"]


def test_user_models_skip_short_messages_and_cache_briefly() -> None:
    class Counting:
        name = "counting"
        calls = 0

        async def user_model(self, person: Person, message: str, viewer: Viewer) -> str | None:
            self.calls += 1
            return f"model {self.calls}"

    now = [0.0]
    backend = Counting()
    models = UserModels(backend, ttl_s=60, clock=lambda: now[0])  # type: ignore[arg-type]

    async def run() -> list[str | None]:
        results = [await models.for_message(DANA, "ok", DANA_DM)]
        results.append(await models.for_message(DANA, "what is the plan today", DANA_DM))
        results.append(await models.for_message(DANA, "and for tomorrow then?", DANA_DM))
        now[0] = 61
        results.append(await models.for_message(DANA, "thanks", DANA_DM))
        results.append(await models.for_message(DANA, "what about next week", DANA_DM))
        return results

    assert asyncio.run(run()) == [None, "model 1", "model 1", "model 1", "model 2"]


def test_the_queue_survives_a_change_of_event_loop() -> None:
    backend = FlakyBackend(0)
    queue = IngestQueue(backend, base_delay_s=0.001)  # type: ignore[arg-type]

    async def first() -> None:
        queue.submit(_said("one"))

    async def second() -> int:
        queue.submit(_said("two"))
        return await queue.drain(5)

    asyncio.run(first())
    assert asyncio.run(second()) == 0
    assert {t.user_text for t in backend.received} == {"one", "two"}


def test_a_refusal_is_not_retried() -> None:
    class Refusing:
        name = "refusing"
        calls = 0

        async def ingest(self, turn: TurnMessages) -> None:
            self.calls += 1
            error = RuntimeError("unprocessable")
            error.status_code = 422  # type: ignore[attr-defined]
            raise error

    backend = Refusing()

    async def run() -> int:
        queue = IngestQueue(backend, base_delay_s=0.001)  # type: ignore[arg-type]
        queue.submit(_said("bad"))
        return await queue.drain(5)

    assert asyncio.run(run()) == 1 and backend.calls == 1


class _ThreadNotingOutbox(IngestOutbox):
    """The real outbox, noting the thread each row is written on."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.written_on: list[threading.Thread] = []

    def add(self, turn: TurnMessages, *, hold_s: float | None = None) -> int:
        self.written_on.append(threading.current_thread())
        return super().add(turn, hold_s=hold_s)


def test_the_outbox_row_is_written_off_the_turns_loop_and_turns_keep_their_order(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    outbox = _ThreadNotingOutbox(open_database([IDENTITY]))
    backend = FlakyBackend(0)

    async def run() -> int:
        queue = IngestQueue(backend, outbox=Offloaded(outbox))  # type: ignore[arg-type]
        for text in ("I prefer tea", "I prefer coffee", "I prefer water"):
            queue.submit(_said(text))
        assert outbox.written_on == []  # submit returned before any write
        return await queue.drain(5)

    assert asyncio.run(run()) == 0
    assert outbox.written_on and threading.main_thread() not in outbox.written_on
    assert [t.user_text for t in backend.received] == [
        "I prefer tea", "I prefer coffee", "I prefer water"]
    assert outbox.count() == 0  # each row went once its turn was sent


def test_turns_an_earlier_run_left_go_first_and_drain_waits_for_nothing_else(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    import time

    outbox = IngestOutbox(open_database([IDENTITY]))
    outbox.add(_said("I prefer tea"))  # left by a run that stopped
    backend = FlakyBackend(0)

    async def run() -> tuple[int, float]:
        queue = IngestQueue(backend, outbox=Offloaded(outbox))  # type: ignore[arg-type]
        queue.submit(_said("I prefer coffee"))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        unsent = await queue.drain(60)
        return unsent, time.monotonic() - started

    unsent, drained_in = asyncio.run(run())
    assert unsent == 0 and outbox.count() == 0
    assert [t.user_text for t in backend.received] == ["I prefer tea", "I prefer coffee"]
    # Nothing was left to send: drain returns, it does not sit out its 60 s.
    assert drained_in < 30
