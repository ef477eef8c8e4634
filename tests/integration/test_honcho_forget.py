"""A forgotten person stays forgotten, and long listings are complete, against the loopback
Honcho (its deriver and dreamer run later, as the real ones do) through the real SDK."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.identity.honcho import HonchoIdentity, person_peer_id
from layers.identity.ids import honcho_id
from layers.identity.protocol import Person
from layers.shared.places import Place, Viewer
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers.honcho_api import FakeHoncho

WORKSPACE = honcho_id("T1")
DANA = Person("T1", "U1", "Dana")
DM = Place("T1", "D1", "im", "5.1")
THREAD = Place("T1", "C1", "public", "6.1")
SETTLE_S = 0.6


@pytest.fixture
def honcho() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def app(
    model_settings: Settings, honcho: FakeHoncho, hashing_embedder: HashingEmbedder
) -> Iterator[Thoth]:
    settings = model_settings.model_copy(update={
        "honcho_url": honcho.url,
        "honcho_api_key": SecretStr("hch-test-key"),
        "honcho_forget_settle_min": SETTLE_S / 60,
    })
    thoth = build(settings, embedder=hashing_embedder)
    assert isinstance(thoth.identity, HonchoIdentity)
    yield thoth
    thoth.close()


def _backend(app: Thoth) -> HonchoIdentity:
    assert isinstance(app.identity, HonchoIdentity)
    return app.identity


async def _say(app: Thoth, place: Place, user: str, text: str) -> None:
    turn = Turn(f"slack:T1:{place.channel}:{place.thread_ts}", text, place, user=user,
                user_name="Dana" if user == "U1" else "Lee")
    await app.pipeline.handle(turn, RecordingSink())
    assert app.identity_ingest is not None
    await app.identity_ingest.drain(10)


def _said_by_dana(honcho: FakeHoncho) -> list[str]:
    return [m["content"] for m in honcho.stored_messages(WORKSPACE)
            if m["peer_id"] == person_peer_id(DANA)]


def _about_dana(honcho: FakeHoncho) -> list[str]:
    return [c["content"] for c in honcho.stored_conclusions(WORKSPACE)
            if c["observed_id"] == person_peer_id(DANA)]


def test_a_fact_derived_after_the_forget_from_earlier_words_never_comes_back(
    app: Thoth, honcho: FakeHoncho
) -> None:
    backend = _backend(app)
    asyncio.run(_say(app, DM, "U1", "I am moving to Lisbon in spring"))
    asyncio.run(_say(app, THREAD, "U1", "I prefer the blue design"))
    asyncio.run(_say(app, THREAD, "U2", "I prefer the green one"))
    honcho.run_dreamer()  # a card from nothing yet; the deriver has not run
    assert honcho.card(WORKSPACE, person_peer_id(DANA)) is None

    app.tombstones.record(DANA)
    forgotten = asyncio.run(backend.forget_person(DANA))
    assert forgotten.conversations == 1 and forgotten.conversations_kept == 1
    assert "swept in" in forgotten.describe()
    peer = honcho.peer_record(WORKSPACE, person_peer_id(DANA))
    assert peer["metadata"] == {}  # no name, no Slack ids left on the peer
    # What Dana says after the forget waits: it would be swept with the late facts.
    asyncio.run(_say(app, THREAD, "U1", "I now prefer the red design"))
    assert "I now prefer the red design" not in _said_by_dana(honcho)

    # Honcho's deriver works off its batch after the forget: a fact from the shared thread.
    assert honcho.run_deriver() >= 1
    honcho.run_dreamer()
    assert any("blue design" in text for text in _about_dana(honcho))
    assert honcho.card(WORKSPACE, person_peer_id(DANA))
    # A read that meets a late fact deletes it; the user model knows nothing meanwhile.
    assert asyncio.run(backend.facts(DANA)) == []
    assert _about_dana(honcho) == []
    viewer = Viewer(team="T1", channel="C1", channel_type="public", user="U1")
    assert asyncio.run(backend.user_model(DANA, "which design?", viewer)) is None

    # Another late one, met by no read: the sweep after the settling time deletes it, and
    # the card built from it; then the turn that waited is sent.
    honcho.workspaces[WORKSPACE].underived.extend(
        m["id"] for m in honcho.stored_messages(WORKSPACE) if m["peer_id"] ==
        person_peer_id(DANA))
    honcho.run_deriver()
    honcho.run_dreamer()
    time.sleep(SETTLE_S + 0.1)
    assert app.identity_ingest is not None

    async def sweep() -> list[str]:
        swept = await app.housekeeping.sweep_forgotten()
        assert app.identity_ingest is not None
        await app.identity_ingest.drain(10)
        return swept

    assert asyncio.run(sweep()) == [DANA.key]
    assert _about_dana(honcho) == []
    assert honcho.card(WORKSPACE, person_peer_id(DANA)) == []
    assert "I now prefer the red design" in _said_by_dana(honcho)
    # Only what was said after the forget is learned again.
    honcho.run_deriver()
    learned = _about_dana(honcho)
    assert learned and all("red design" in text for text in learned)
    assert asyncio.run(app.housekeeping.sweep_forgotten()) == []  # swept once


def test_the_forget_me_turn_and_earlier_turns_are_never_ingested_and_no_session_is_made(
    app: Thoth, honcho: FakeHoncho
) -> None:
    backend = _backend(app)
    asyncio.run(_say(app, DM, "U1", "I am moving to Lisbon in spring"))
    before = len(honcho.requests)
    app.tombstones.record(DANA)
    asyncio.run(backend.forget_person(DANA))
    made = [r for r in honcho.requests[before:] if r.method == "POST"
            and r.path.endswith("/sessions")]
    assert made == []  # the DM's session was deleted without first being got-or-made
    assert honcho.workspaces[WORKSPACE].sessions == {}
    # A retried turn from before the forget is dropped, not sent.
    assert app.identity_ingest is not None
    from layers.identity.protocol import TurnMessages

    early = TurnMessages(DANA, "s-early", "I like tea", "noted", time.time() - 60)

    async def submit() -> None:
        assert app.identity_ingest is not None
        app.identity_ingest.submit(early)
        await app.identity_ingest.drain(10)

    asyncio.run(submit())
    assert "I like tea" not in _said_by_dana(honcho)


def _seed(honcho: FakeHoncho, count: int) -> None:
    """``count`` facts about Dana, 100 to a creation time (as Honcho stamps a batch)."""
    with honcho._lock:
        workspace = honcho.workspaces[WORKSPACE]
        start = datetime.now(UTC) - timedelta(days=1)
        for number in range(count):
            conclusion_id = f"cncl_seed{number:05d}"
            workspace.conclusions[conclusion_id] = {
                "id": conclusion_id, "content": f"Dana knows fact number {number}",
                "observer_id": person_peer_id(DANA), "observed_id": person_peer_id(DANA),
                "session_id": None, "level": "explicit", "source_ids": None,
                "times_derived": 1,
                "created_at": (start + timedelta(seconds=number // 100)).isoformat(),
            }


def test_three_hundred_facts_are_each_listed_once_and_a_known_one_is_not_sent_again(
    app: Thoth, honcho: FakeHoncho
) -> None:
    backend = _backend(app)
    asyncio.run(backend.warm_up("T1"))
    asyncio.run(backend.facts(DANA))
    _seed(honcho, 300)
    before = len(honcho.requests)
    facts = asyncio.run(backend.facts(DANA))
    assert len(facts) == 300 and len({fact.id for fact in facts}) == 300
    assert len(honcho.requests) - before == 4  # 3 full pages and one to see the end

    made = asyncio.run(backend.observe(DANA, ["Dana knows fact number 7", "Dana rides a bike"],
                                       session_id=None, source="reflection"))
    assert len(made) == 1 and len(_about_dana(honcho)) == 301
    before = len(honcho.requests)
    again = asyncio.run(backend.observe(DANA, ["Dana rides a bike"], session_id=None,
                                        source="reflection"))
    assert again == [] and len(honcho.requests) - before == 1  # only what is new is read


def test_the_bust_reaction_records_the_fact_its_own_write_made_and_undoes_only_that(
    app: Thoth, honcho: FakeHoncho
) -> None:
    backend = _backend(app)
    asyncio.run(backend.facts(DANA))
    _seed(honcho, 300)
    (made,) = asyncio.run(backend.observe(DANA, ["marked as about them: deploys"],
                                          session_id=None, source="👤 reaction"))
    stored = {c["id"]: c["content"] for c in honcho.stored_conclusions(WORKSPACE)}
    assert stored[made] == "marked as about them: deploys"
    assert asyncio.run(backend.forget(DANA, made)) == 1
    left = {c["id"] for c in honcho.stored_conclusions(WORKSPACE)}
    assert made not in left and len(left) == 300
    # An id that is not Dana's is never passed on to Honcho's workspace-wide delete.
    assert asyncio.run(backend.forget(DANA, "cncl_not_hers")) == 0
    assert not honcho.requests_to("/conclusions/cncl_not_hers", "DELETE")


def test_an_item_of_sixty_thousand_tokens_is_kept(app: Thoth, honcho: FakeHoncho) -> None:
    backend = _backend(app)
    huge = "deploy, " * 30_000  # 60 000 tokens: a word and a mark each time
    (made,) = asyncio.run(backend.observe(DANA, [huge], session_id=None, source="reflection"))
    (stored,) = [c for c in honcho.stored_conclusions(WORKSPACE) if c["id"] == made]
    assert stored["content"].startswith("deploy, deploy,") and stored["content"].endswith("[…]")


def test_a_worker_holds_turns_said_after_a_forget_until_its_sweep_then_sends_them(
    app: Thoth, honcho: FakeHoncho
) -> None:
    from bridge.worker.identity_outbox import send_outbox
    from bridge.worker.worker import Queues, Worker
    from layers.identity.outbox import IngestOutbox
    from layers.identity.protocol import TurnMessages
    from layers.shared.offloaded import Offloaded

    backend = _backend(app)
    asyncio.run(backend.warm_up("T1"))
    outbox = IngestOutbox(app.db)
    app.tombstones.record(DANA)
    outbox.add(TurnMessages(DANA, "s-after", "I prefer the red design", "Noted.", time.time()))
    offloaded, tombstones = Offloaded(outbox), Offloaded(app.tombstones)
    assert asyncio.run(send_outbox(offloaded, backend, tombstones)) == 0
    assert outbox.count() == 1 and _said_by_dana(honcho) == []
    worker = Worker(Queues(reflections=None, launch=lambda _s, _b: 0, outbox=offloaded,
                           identity=backend, followups=Offloaded(app.followups), slack=None,
                           tombstones=tombstones))
    assert {"identity ingest", "forget sweep"} <= set(worker.jobs())
    assert asyncio.run(worker.sweep_once()) == 0  # not settled yet: nothing is swept
    time.sleep(SETTLE_S + 0.1)
    assert asyncio.run(worker.sweep_once()) == 1
    assert asyncio.run(send_outbox(offloaded, backend, tombstones)) == 1
    assert _said_by_dana(honcho) == ["I prefer the red design"] and outbox.count() == 0
