"""Issue 55, fault 4: Honcho is away (503, refused, reset, hung) while turns come in.

Against the loopback Honcho through the real honcho-ai SDK, and the real outbox in SQLite:
turns go on without the user model (at once, not after its deadline), the outbox keeps
every turn and drains in order within seconds of Honcho's return, nothing is stored twice
(a write that landed but whose answer was lost is found by its turn key), and the health
registry says failing during the outage and nothing after it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest

from bridge.worker.identity_outbox import send_outbox
from layers.identity.honcho import HonchoIdentity
from layers.identity.ids import honcho_id
from layers.identity.ingest_queue import IngestQueue
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Person, TurnMessages
from layers.identity.scope import ReadableSessions
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.dependency_health import HONCHO, DependencyHealth
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.engines import open_sqlite
from tests.servers.honcho_api import DOWN_MODES, FakeHoncho

PROBE_EVERY_S = 0.2
TIMEOUT_S = 0.5
# From Honcho's return to the outbox empty (issue 55 asks 10 s; here probes are 0.2 s).
RECOVERY_BOUND_S = 3.0
DANA, OMAR = Person("T1", "U1", "Dana"), Person("T1", "U2", "Omar")
WORKSPACE = honcho_id("T1")


@pytest.fixture
def honcho() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = open_sqlite(tmp_path_factory.mktemp("outbox") / "thoth.db", schemas=LAYER_SCHEMAS)
    yield database
    database.close()


def _identity(honcho: FakeHoncho, db: Database, health: DependencyHealth) -> HonchoIdentity:
    def client(workspace: str) -> object:
        from honcho import Honcho

        return Honcho(api_key="hch-test-key", base_url=honcho.url, workspace_id=workspace,
                      timeout=TIMEOUT_S, max_retries=0)

    return HonchoIdentity(client, workspace_id=None, server_url=honcho.url,
                          readable_sessions=ReadableSessions(db), health=health,
                          api_key="hch-test-key", probe_every_s=PROBE_EVERY_S,
                          probe_timeout_s=TIMEOUT_S)


def _turns(count: int) -> list[TurnMessages]:
    """Two people, turns interleaved, each turn's text naming its order."""
    start = time.time()
    return [
        TurnMessages(person, f"s-{person.user}", f"{person.name} says number {index}",
                     f"Noted {index}.", start + index)
        for index in range(count)
        for person in [(DANA, OMAR)[index % 2]]
    ]


def _said(honcho: FakeHoncho, person: Person) -> list[str]:
    if WORKSPACE not in honcho.workspaces:
        return []
    return [m["content"] for m in honcho.stored_messages(WORKSPACE)
            if m["peer_id"] != "thoth" and m["content"].startswith(person.name or "")]


def _expected(turns: list[TurnMessages], person: Person) -> list[str]:
    return [turn.user_text for turn in turns if turn.person == person]


async def _until(condition: object, timeout_s: float) -> float:
    """Seconds until ``condition()`` holds (fails the test after ``timeout_s``)."""
    assert callable(condition)
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, "timed out"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


@pytest.mark.parametrize("mode", DOWN_MODES)
def test_the_inline_queue_keeps_every_turn_and_sends_them_in_order_once_honcho_is_back(
    honcho: FakeHoncho, db: Database, mode: str, caplog: pytest.LogCaptureFixture,
) -> None:
    health = DependencyHealth()
    identity = _identity(honcho, db, health)
    outbox = IngestOutbox(db)
    turns = _turns(8)

    async def run() -> float:
        queue = IngestQueue(identity, outbox=Offloaded(outbox), base_delay_s=0.01)
        honcho.down(mode, retry_after=30 if mode == "status" else None)
        for turn in turns:
            queue.submit(turn)
        await _until(lambda: health.is_failing(HONCHO), 5)
        await asyncio.sleep(1.0)  # several probes go unanswered meanwhile
        assert outbox.count() == len(turns)  # every turn kept
        assert WORKSPACE not in honcho.workspaces  # nothing reached Honcho
        honcho.up()
        recovered = await _until(lambda: outbox.count() == 0, 10)
        assert await queue.drain(5) == 0
        return recovered

    with caplog.at_level(logging.INFO):
        recovered = asyncio.run(run())
    assert recovered < RECOVERY_BOUND_S
    if mode != "refused":  # a refused connection reaches no server at all
        assert honcho.turned_away > 1  # the outage was met, and probed more than once
    for person in (DANA, OMAR):
        assert _said(honcho, person) == _expected(turns, person)  # in order, once each
    assert len(honcho.stored_messages(WORKSPACE)) == 2 * len(turns)
    assert not health.is_failing(HONCHO)
    lines = [r.getMessage() for r in caplog.records if r.name == "layers.shared.dependency_health"]
    assert len([line for line in lines if line.startswith("honcho is failing")]) == 1
    assert len([line for line in lines if line.startswith("honcho is back")]) == 1
    # No line per failed try while it was away (the health lines say it).
    assert not [r for r in caplog.records if "identity ingest failed" in r.getMessage()]


@pytest.mark.parametrize("mode", ["status", "refused"])
def test_the_worker_drains_the_outbox_in_order_within_seconds_of_the_return(
    honcho: FakeHoncho, db: Database, mode: str,
) -> None:
    health = DependencyHealth()
    identity = _identity(honcho, db, health)
    outbox = IngestOutbox(db)
    turns = _turns(6)
    for turn in turns:
        outbox.add(turn)  # as `thoth serve` with BACKGROUND_WORK=workers leaves them

    async def rounds(stop: asyncio.Event) -> None:
        # The worker's loop (bridge/worker/worker.py), with a short poll.
        while not stop.is_set():
            if not await send_outbox(Offloaded(outbox), identity):
                await asyncio.sleep(0.1)

    async def run() -> float:
        honcho.down(mode)
        stop = asyncio.Event()
        worker = asyncio.create_task(rounds(stop))
        await _until(lambda: health.is_failing(HONCHO), 5)
        await asyncio.sleep(1.0)
        assert outbox.count() == len(turns)
        honcho.up()
        recovered = await _until(lambda: outbox.count() == 0, 10)
        stop.set()
        await worker
        return recovered

    assert asyncio.run(run()) < RECOVERY_BOUND_S
    for person in (DANA, OMAR):
        assert _said(honcho, person) == _expected(turns, person)
    assert len(honcho.stored_messages(WORKSPACE)) == 2 * len(turns)
    assert not health.is_failing(HONCHO)


def test_a_failed_head_holds_back_its_persons_later_turns_not_the_others(
    honcho: FakeHoncho, db: Database,
) -> None:
    """Honcho answers, but one turn fails (a 500 for its session): it is retried with
    backoff, and the same person's later turn waits for it; the other person's go on."""
    identity = _identity(honcho, db, DependencyHealth())
    outbox = IngestOutbox(db)
    turns = _turns(4)  # Dana 0, Omar 1, Dana 2, Omar 3
    for turn in turns:
        outbox.add(turn)
    honcho.fail_next(500, count=1, match=f"{honcho_id('s-U1')}/messages$")

    async def run() -> None:
        await send_outbox(Offloaded(outbox), identity, retry_base_s=0.4)
        # The batch stopped at Dana 0; the next round sends Omar's, not Dana's later one.
        while await send_outbox(Offloaded(outbox), identity, retry_base_s=0.4):
            pass
        assert _said(honcho, OMAR) == _expected(turns, OMAR)
        assert _said(honcho, DANA) == []
        started = time.monotonic()
        while outbox.count() and time.monotonic() - started < 5:
            if not await send_outbox(Offloaded(outbox), identity, retry_base_s=0.4):
                await asyncio.sleep(0.05)

    asyncio.run(run())
    assert outbox.count() == 0
    assert _said(honcho, DANA) == _expected(turns, DANA)


@pytest.mark.parametrize("sender", ["inline", "worker"])
def test_a_write_that_landed_but_whose_answer_was_lost_is_not_stored_twice(
    honcho: FakeHoncho, db: Database, sender: str,
) -> None:
    health = DependencyHealth()
    identity = _identity(honcho, db, health)
    outbox = IngestOutbox(db)
    turn = _turns(1)[0]
    honcho.reset_after_applying(match="/messages$")

    async def inline() -> None:
        queue = IngestQueue(identity, outbox=Offloaded(outbox), base_delay_s=0.01)
        queue.submit(turn)
        assert await queue.drain(5) == 0

    async def worker() -> None:
        outbox.add(turn)
        started = time.monotonic()
        while outbox.count() and time.monotonic() - started < 5:
            if not await send_outbox(Offloaded(outbox), identity, retry_base_s=0.05):
                await asyncio.sleep(0.05)

    asyncio.run(inline() if sender == "inline" else worker())
    assert outbox.count() == 0
    stored = honcho.stored_messages(WORKSPACE)
    assert [m["content"] for m in stored] == [turn.user_text, turn.reply_text]  # once
    # The second try asked Honcho whether it held the turn already (its turn key).
    assert [r for r in honcho.requests_to("/messages/list") if r.body and "filters" in r.body]


def test_the_user_model_does_not_wait_on_honcho_known_to_be_away(
    honcho: FakeHoncho, db: Database,
) -> None:
    health = DependencyHealth()
    identity = _identity(honcho, db, health)
    identity._readable_sessions = lambda person, viewer, *, limit: ["s-U1"]
    viewer = Viewer("T1", "C1", "public", "U1")

    async def asked() -> tuple[str | None, float]:
        started = time.monotonic()
        model = await identity.user_model(DANA, "what do you know about my trip", viewer)
        return model, time.monotonic() - started

    async def run() -> None:
        honcho.down("hang")
        with pytest.raises(Exception, match="timed out"):
            await identity.ingest(_turns(1)[0])  # a send timed out: Honcho is away
        assert health.is_failing(HONCHO)
        for _ in range(5):
            # Skipped at once, not after the client's timeout nor the turn's deadline.
            model, took = await asked()
            assert model is None and took < 0.1
        assert not [path for path in honcho.turned_away_paths if "representation" in path]
        honcho.up()
        # Found back by the watcher's probe, with no turn needing to ask.
        await _until(lambda: not health.is_failing(HONCHO), 3)
        await asked()
        assert honcho.requests_to("/representation")  # asked again once it is back

    asyncio.run(run())


def test_the_inline_queue_sets_a_failing_turn_aside_and_its_persons_later_turns_with_it(
    honcho: FakeHoncho, db: Database,
) -> None:
    """Honcho answers, but Dana's first turn fails every try: Omar's turns go on, Dana's
    later turn does not overtake it, and both go, in order, once it is taken up again."""
    identity = _identity(honcho, db, DependencyHealth())
    outbox = IngestOutbox(db)
    turns = _turns(4)  # Dana 0, Omar 1, Dana 2, Omar 3
    honcho.fail_next(500, count=2, match=f"{honcho_id('s-U1')}/messages$")

    async def run() -> None:
        queue = IngestQueue(identity, outbox=Offloaded(outbox), attempts=2, base_delay_s=0.01,
                            set_aside_s=0.5)
        for turn in turns:
            queue.submit(turn)
        await _until(lambda: _said(honcho, OMAR) == _expected(turns, OMAR), 5)
        assert _said(honcho, DANA) == []  # set aside, and her later turn behind it
        await _until(lambda: outbox.count() == 0, 5)
        assert await queue.drain(5) == 0

    asyncio.run(run())
    assert _said(honcho, DANA) == _expected(turns, DANA)
    assert len(honcho.stored_messages(WORKSPACE)) == 2 * len(turns)


def test_turns_that_find_the_queue_full_during_an_outage_wait_in_the_outbox_in_order(
    honcho: FakeHoncho, db: Database,
) -> None:
    identity = _identity(honcho, db, DependencyHealth())
    outbox = IngestOutbox(db)
    turns = _turns(10)

    async def run() -> None:
        queue = IngestQueue(identity, outbox=Offloaded(outbox), capacity=2, base_delay_s=0.01)
        honcho.down("refused")
        for turn in turns:
            queue.submit(turn)
        await _until(lambda: outbox.count() == len(turns) and not queue._keeping, 5)
        await asyncio.sleep(0.5)
        honcho.up()
        await _until(lambda: outbox.count() == 0, 10)
        assert await queue.drain(5) == 0
        assert queue.stats.dropped == 0

    asyncio.run(run())
    for person in (DANA, OMAR):
        assert _said(honcho, person) == _expected(turns, person)
    assert len(honcho.stored_messages(WORKSPACE)) == 2 * len(turns)


def test_a_fact_whose_answer_was_lost_is_not_made_again(
    honcho: FakeHoncho, db: Database,
) -> None:
    """Reflection's facts (``observe``): Honcho made them but the answer was lost; the
    next try lists what was made since and does not make them twice."""
    health = DependencyHealth()
    identity = _identity(honcho, db, health)
    honcho.reset_after_applying(match="/conclusions$")

    async def run() -> list[str]:
        with pytest.raises(Exception, match="(?i)disconnect|connection|reset"):
            await identity.observe(DANA, ["Dana prefers tea"], session_id="s-U1",
                                   source="reflection")
        assert health.is_failing(HONCHO)
        return await identity.observe(DANA, ["Dana prefers tea"], session_id="s-U1",
                                      source="reflection")

    assert asyncio.run(run()) == []  # known already: nothing made
    assert [c["content"] for c in honcho.stored_conclusions(WORKSPACE)] == ["Dana prefers tea"]
    assert not health.is_failing(HONCHO)
