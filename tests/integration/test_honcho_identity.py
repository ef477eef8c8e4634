"""The Honcho backend through the real honcho-ai SDK against the loopback Honcho server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.pipeline.pipeline import TurnOutcome
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.identity.honcho import AGENT_PEER, HonchoIdentity, person_peer_id
from layers.identity.ids import honcho_id
from layers.identity.protocol import Person
from layers.identity.scope import ReadableSessions
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place, Viewer
from layers.shared.storage.database import Database
from layers.shared.storage.engines import open_sqlite
from layers.working.transcript import TranscriptTurn
from tests.fakes import HashingEmbedder, RecordingSink
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.honcho_api import FakeHoncho

PLACE = Place("T1", "C1", "public", "1712.55", "general")
DEADLINE_S = 0.5


@pytest.fixture
def honcho() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def app(
    model_settings: Settings, honcho: FakeHoncho, hashing_embedder: HashingEmbedder
) -> Iterator[Thoth]:
    settings = model_settings.model_copy(
        update={
            "honcho_url": honcho.url,
            "honcho_api_key": SecretStr("hch-test-key"),
            "user_model_timeout_s": DEADLINE_S,
        }
    )
    thoth = build(settings, embedder=hashing_embedder)
    assert isinstance(thoth.identity, HonchoIdentity)
    assert thoth.identity_ingest is not None
    thoth.identity_ingest._base_delay_s = 0.01  # keep the test's retries quick
    yield thoth
    thoth.close()


def _direct_identity(
    honcho: FakeHoncho, db: Database, *, key: str = "hch-test-key", timeout_s: float = 2.0
) -> HonchoIdentity:
    """The Honcho backend on its own (no app), with a client that never retries."""

    def client(workspace: str) -> object:
        from honcho import Honcho

        return Honcho(api_key=key, base_url=honcho.url, workspace_id=workspace,
                      timeout=timeout_s, max_retries=0)

    return HonchoIdentity(client, workspace_id=None, server_url=honcho.url,
                          readable_sessions=ReadableSessions(db))


async def _turns(app: Thoth, texts: list[str]) -> list[TurnOutcome]:
    outcomes = []
    for text in texts:
        turn = Turn("slack:T1:C1:1712.55", text, PLACE, user="U1", user_name="Dana")
        outcomes.append(await app.pipeline.handle(turn, RecordingSink()))
    return outcomes


def test_both_messages_of_each_turn_arrive(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    async def run() -> list[TurnOutcome]:
        outcomes = await _turns(app, ["I prefer short answers please", "What is on today?"])
        assert app.identity_ingest is not None
        assert await app.identity_ingest.drain(10) == 0
        return outcomes

    outcomes = asyncio.run(run())
    dana_peer = person_peer_id(Person("T1", "U1"))
    workspace = honcho_id("T1")
    stored = honcho.stored_messages(workspace, honcho_id(outcomes[0].session_id))
    assert [(m["peer_id"], m["content"]) for m in stored] == [
        (dana_peer, "I prefer short answers please"),
        (AGENT_PEER, outcomes[0].reply),
        (dana_peer, "What is on today?"),
        (AGENT_PEER, outcomes[1].reply),
    ]


def test_a_turn_meets_its_deadline_when_honcho_hangs(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    honcho.hang()

    async def run() -> tuple[TurnOutcome, float]:
        started = time.monotonic()
        (outcome,) = await _turns(app, ["Tell me about the release plan for Friday"])
        return outcome, time.monotonic() - started

    try:
        outcome, elapsed = asyncio.run(run())
    finally:
        honcho.release()
    assert outcome.ok
    # The deadline plus a generous margin for a shared machine; a hang would be forever.
    assert elapsed < DEADLINE_S + 3.0
    texts = fake_anthropic.requests[-1].context_texts()
    assert not any(t.startswith("<user-model>") for t in texts)


async def _ingested_turn(app: Thoth, text: str) -> TurnOutcome:
    """One turn, with its identity ingest drained (sent, or given up)."""
    (outcome,) = await _turns(app, [text])
    assert app.identity_ingest is not None
    assert await app.identity_ingest.drain(10) == 0
    return outcome


def test_an_outage_loses_nothing_the_queue_can_retry(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    honcho.fail_next(503, count=3, match="/messages")
    outcome = asyncio.run(_ingested_turn(app, "Remember that the demo moved to Thursday"))
    stored = honcho.stored_messages(honcho_id("T1"), honcho_id(outcome.session_id))
    assert [m["content"] for m in stored][0] == "Remember that the demo moved to Thursday"
    assert len(honcho.requests_to("/messages", "POST")) >= 4


def test_observations_feed_the_user_model_and_can_be_forgotten(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    identity = app.identity
    assert identity is not None
    # Slack punctuation in every id: a dotted user, a colon in the session.
    dana = Person("T1", "U1.ext:42", "Dana")

    # The fact's place is its session: a public channel's, where Dana spoke.
    session = app.sessions.open("slack:T1:C1:1712.55", PLACE)
    app.transcript.append(session.id, TranscriptTurn("hi", "hello", user=dana.user))

    async def run() -> tuple[str | None, int, list[str]]:
        await identity.observe(
            dana, ["Dana leads the payments team"], session_id=session.id, source="reflection",
        )
        model = await identity.user_model(dana, "who leads payments?", Viewer("T1", "C2"))
        forgotten = await identity.forget(dana)
        return model, forgotten, [f.text for f in await identity.facts(dana)]

    model, forgotten, after = asyncio.run(run())
    assert model is not None and "Dana leads the payments team" in model
    assert forgotten == 1 and after == []


def test_doctor_reports_the_backend_and_whether_it_answers(
    app: Thoth, honcho: FakeHoncho
) -> None:
    from bridge.health_checks import Status, run_checks

    (ok,) = [c for c in run_checks(app) if c.name == "identity"]
    assert ok.status is Status.OK and ok.detail.startswith("Honcho backend 3.0.12")
    assert honcho.workspaces == {}  # doctor wrote nothing: no workspace, no peer
    # The version, then one read the key must pass (listing workspaces: an admin key's).
    assert [(r.method, r.path) for r in honcho.requests] == [
        ("GET", "/openapi.json"), ("POST", "/v3/workspaces/list")]
    assert honcho.requests[1].headers["authorization"] == "Bearer hch-test-key"
    honcho.api_key = "hch-the-rotated-key"
    (refused,) = [c for c in run_checks(app) if c.name == "identity"]
    assert refused.status is Status.FAIL
    assert "refused the API key (401)" in refused.detail and "HONCHO_API_KEY" in refused.detail
    honcho.api_key = None
    honcho.fail_next(500, count=5)
    app.identity._objects.clear()  # type: ignore[union-attr]
    (down,) = [c for c in run_checks(app) if c.name == "identity"]
    assert down.status is Status.FAIL and "unreachable" in down.detail


def test_people_never_share_a_peer_or_reach_each_others_facts(
    app: Thoth, honcho: FakeHoncho
) -> None:
    identity = app.identity
    assert isinstance(identity, HonchoIdentity)
    identity._workspace_id = "shared"  # one workspace for every Slack workspace
    t1, t2, named_thoth = Person("T1", "U1"), Person("T2", "U1"), Person("T1", "thoth")
    assert len({person_peer_id(p) for p in (t1, t2, named_thoth)} | {AGENT_PEER}) == 4

    async def run() -> tuple[list[str], int, list[str]]:
        await identity.observe(t1, ["U1 of T1 owns billing"], session_id=None, source="x")
        t2_facts = [f.text for f in await identity.facts(t2)]
        (t1_fact,) = await identity.facts(t1)
        stolen = await identity.forget(t2, t1_fact.id)
        return t2_facts, stolen, [f.text for f in await identity.facts(t1)]

    t2_facts, stolen, t1_after = asyncio.run(run())
    assert t2_facts == [] and stolen == 0 and t1_after == ["U1 of T1 owns billing"]


def test_forgetting_is_complete_past_a_hundred_facts_made_in_batches(
    app: Thoth, honcho: FakeHoncho
) -> None:
    identity = app.identity
    assert identity is not None
    dana = Person("T1", "U1", "Dana")
    facts = [f"Dana noted item number {n}" for n in range(250)]

    async def run() -> tuple[list[str], int, int]:
        await identity.observe(dana, facts, session_id=None, source="reflection")
        listed = [fact.id for fact in await identity.facts(dana)]
        return listed, await identity.forget(dana), len(await identity.facts(dana))

    listed, forgotten, left = asyncio.run(run())
    # Honcho's pages overlap when a batch shares one creation time; each fact is listed once.
    assert len(listed) == len(set(listed)) == 250
    assert forgotten == 250 and left == 0
    assert honcho.stored_conclusions(honcho_id("T1")) == []


def test_observations_are_batched_within_limits_deduplicated_and_one_bad_item_loses_nothing(
    app: Thoth, honcho: FakeHoncho, caplog: pytest.LogCaptureFixture
) -> None:
    identity = app.identity
    assert identity is not None
    dana = Person("T1", "U1", "Dana")
    # Over Honcho's 8 192 tokens however counted: cut to a safe size and kept, not refused.
    too_many_tokens = "!" * 12_000
    notes = [f"Dana prefers option {n}" for n in range(149)] + [too_many_tokens]
    # A refusal of the first batch and of one item: the rest still go, one by one.
    honcho.fail_next(422, count=2, match="/conclusions$",
                     detail=[{"msg": f"bad input {notes[0]}"}])

    async def run() -> list[str]:
        await identity.observe(dana, notes, session_id=None, source="reflection")
        await identity.observe(dana, notes[:10], session_id=None, source="reflection")
        return [fact.text for fact in await identity.facts(dana)]

    stored = asyncio.run(run())
    cut = [text for text in stored if text.startswith("!!!")]
    assert len(cut) == 1 and cut[0].endswith("[…]") and len(cut[0].encode()) <= 8_000
    assert set(notes[:149]) <= set(stored)
    creates = [r.body for r in honcho.requests_to("/conclusions", "POST")
               if isinstance(r.body, dict) and "conclusions" in r.body]
    assert all(len(body["conclusions"]) <= 100 for body in creates)
    assert len(honcho.stored_conclusions(honcho_id("T1"))) == 150  # the repeats were skipped
    # The refusal is logged by its size and kind, never with the refused text.
    refused = [r.getMessage() for r in caplog.records if "refused one conclusion" in r.getMessage()]
    assert refused and all("Dana prefers" not in line and len(line) < 200 for line in refused)


def test_text_in_any_script_is_kept_within_honchos_token_limit(
    app: Thoth, honcho: FakeHoncho
) -> None:
    identity = app.identity
    assert identity is not None
    dana = Person("T1", "U1", "Dana")
    chinese = "我们在周五部署支付服务" * 2_000  # 22 000 characters, 44 000 tokens or more
    emoji = "🚀🎉" * 5_000
    asyncio.run(identity.observe(dana, [chinese, emoji], session_id=None, source="reflection"))
    stored = [c["content"] for c in honcho.stored_conclusions(honcho_id("T1"))]
    assert len(stored) == 2  # both kept (cut), neither refused and lost
    assert stored[0].startswith("我们在周五部署") and stored[1].startswith("🚀🎉")
    assert all(len(text.encode()) <= 8_000 for text in stored)


def test_people_have_names_the_agent_is_not_modelled_and_turns_keep_their_time(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    dana = Person("T1", "U1", "Dana")
    identity = app.identity
    assert identity is not None
    outcome = asyncio.run(_ingested_turn(app, "I prefer short answers about payments"))
    peers = {r.body["id"]: r.body for r in honcho.requests_to("/peers", "POST")
             if isinstance(r.body, dict) and "id" in r.body}
    assert peers[AGENT_PEER]["configuration"] == {"observe_me": False}
    assert peers[person_peer_id(dana)]["metadata"]["name"] == "Dana"
    stored = honcho.stored_messages(honcho_id("T1"), honcho_id(outcome.session_id))
    sent_at = {m["created_at"][:19] for m in stored}
    assert len(sent_at) == 1  # both messages carry the turn's own time

    async def model() -> str | None:
        await identity.observe(dana, [f"{person_peer_id(dana)} leads payments"],
                               session_id=outcome.session_id, source="reflection")
        return await identity.user_model(dana, "who leads payments?", Viewer("T1", "C1"))

    text = asyncio.run(model()) or ""
    assert "Dana leads payments" in text and person_peer_id(dana) not in text


def test_an_old_server_or_a_workspace_key_without_its_workspace_is_refused_clearly(
    model_settings: Settings, hashing_embedder: HashingEmbedder
) -> None:
    import base64
    import json

    from bridge.health_checks import Status, run_checks
    from layers.shared.errors import ConfigurationError

    with FakeHoncho(version="3.0.11") as old:
        settings = model_settings.model_copy(
            update={"honcho_url": old.url, "honcho_api_key": SecretStr("hch-test-key")}
        )
        thoth = build(settings, embedder=hashing_embedder)
        (check,) = [c for c in run_checks(thoth) if c.name == "identity"]
        thoth.close()
    assert check.status is Status.FAIL and "3.0.12" in check.detail

    claims = base64.urlsafe_b64encode(json.dumps({"w": "acme"}).encode()).decode().rstrip("=")
    workspace_key = SecretStr(f"eyJhbGciOiJIUzI1NiJ9.{claims}.signature")
    settings = model_settings.model_copy(
        update={"honcho_url": "http://127.0.0.1:9", "honcho_api_key": workspace_key}
    )
    with pytest.raises(ConfigurationError, match="HONCHO_WORKSPACE_ID=acme"):
        build(settings, embedder=hashing_embedder)
    fixed = settings.model_copy(update={"honcho_workspace_id": "acme"})
    build(fixed, embedder=hashing_embedder).close()


def test_warming_up_opens_the_workspace_and_the_agents_peer_before_the_first_turn(
    app: Thoth, honcho: FakeHoncho
) -> None:
    assert app.identity is not None
    asyncio.run(app.identity.warm_up("T1"))
    workspace = honcho.workspaces[honcho_id("T1")]
    assert workspace.peers[AGENT_PEER]["configuration"] == {"observe_me": False}


def test_a_slow_store_then_a_retry_keeps_one_copy_and_waiting_turns_survive_a_restart(
    model_settings: Settings, honcho: FakeHoncho, hashing_embedder: HashingEmbedder
) -> None:
    from layers.identity.ingest_queue import IngestQueue
    from layers.identity.outbox import IngestOutbox
    from layers.identity.protocol import TurnMessages

    db = open_sqlite(model_settings.db_path, schemas=LAYER_SCHEMAS)
    identity = _direct_identity(honcho, db, timeout_s=0.5)
    dana = Person("T1", "U1", "Dana")
    turn = TurnMessages(dana, "s-slow", "A long message " * 500, "Noted.", time.time())
    # Honcho stores the messages, then answers after the client has given up.
    honcho.answer_late(1.5, match="/messages")

    async def first_run() -> None:
        queue = IngestQueue(identity, base_delay_s=0.01, outbox=Offloaded(IngestOutbox(db)))
        queue.submit(turn)
        assert await queue.drain(10) == 0

    asyncio.run(first_run())
    stored = honcho.stored_messages(honcho_id("T1"), honcho_id("s-slow"))
    assert len(stored) == 2  # once, though the first request timed out and was retried
    assert IngestOutbox(db).count() == 0

    # A turn still waiting when the process stops is sent by the next one.
    honcho.fail_next(503, count=50, match="/messages")
    waiting = TurnMessages(dana, "s-restart", "I work from Porto now", "Noted.", time.time())

    async def second_run() -> None:
        queue = IngestQueue(identity, attempts=2, base_delay_s=0.01,
                            outbox=Offloaded(IngestOutbox(db)))
        queue.submit(waiting)
        await queue.drain(5)

    asyncio.run(second_run())
    assert IngestOutbox(db).count() == 1
    honcho.clear_faults()

    async def restarted() -> int:
        queue = IngestQueue(identity, base_delay_s=0.01, outbox=Offloaded(IngestOutbox(db)))
        resumed = await queue.resume()
        assert await queue.drain(10) == 0
        return resumed

    assert asyncio.run(restarted()) == 1
    assert [m["content"] for m in honcho.stored_messages(honcho_id("T1"),
                                                         honcho_id("s-restart"))][0] == (
        "I work from Porto now")
    assert IngestOutbox(db).count() == 0
    db.close()


def test_forget_me_deletes_their_conversations_alone_with_thoth_and_says_what_stays(
    app: Thoth, honcho: FakeHoncho, fake_anthropic: FakeAnthropic
) -> None:
    identity = app.identity
    assert identity is not None and app.identity_ingest is not None
    dana = Person("T1", "U1", "Dana")
    alone = Place("T1", "D1", "im", "5.1")
    shared = Place("T1", "C1", "public", "6.1")

    async def talk() -> list[TurnOutcome]:
        outcomes = []
        for place, user, text in ((alone, "U1", "I am planning to leave in spring"),
                                  (shared, "U1", "I prefer the blue design"),
                                  (shared, "U2", "I prefer the green one")):
            turn = Turn(f"slack:T1:{place.channel}:{place.thread_ts}", text, place, user=user)
            outcomes.append(await app.pipeline.handle(turn, RecordingSink()))
        assert app.identity_ingest is not None
        assert await app.identity_ingest.drain(10) == 0
        return outcomes

    first, second, _ = asyncio.run(talk())
    forgotten = asyncio.run(identity.forget_person(dana))
    assert forgotten.conversations == 1 and forgotten.conversations_kept == 1
    assert "1 conversation(s) they had alone" in forgotten.describe()
    workspace = honcho_id("T1")
    assert honcho.stored_messages(workspace, honcho_id(first.session_id)) == []
    assert honcho.stored_messages(workspace, honcho_id(second.session_id)) != []


def test_the_dialectic_is_scoped_like_the_representation_and_never_reads_a_peer_card(
    model_settings: Settings, honcho: FakeHoncho, hashing_embedder: HashingEmbedder
) -> None:
    settings = model_settings.model_copy(update={
        "honcho_url": honcho.url, "honcho_api_key": SecretStr("hch-test-key"),
        "honcho_user_model": "dialectic",
    })
    app = build(settings, embedder=hashing_embedder)
    identity = app.identity
    assert identity is not None
    dana = Person("T1", "U1", "Dana")
    sessions = {}
    for kind, place in (("dm", Place("T1", "D1", "im", "7.1")),
                        ("public", Place("T1", "C1", "public", "8.1"))):
        session = app.sessions.open(f"slack:T1:{place.channel}:1", place)
        app.transcript.append(session.id, TranscriptTurn("hi", "hello", user="U1"))
        sessions[kind] = session.id

    async def run() -> str | None:
        await identity.observe(dana, ["Dana is job hunting"], session_id=sessions["dm"],
                               source="reflection")
        await identity.observe(dana, ["Dana leads payments"], session_id=sessions["public"],
                               source="reflection")
        peer = person_peer_id(dana)
        honcho.workspaces[honcho_id("T1")].cards[(peer, peer)] = ["Dana is job hunting"]
        return await identity.user_model(dana, "who leads payments here?", Viewer("T1", "C2"))

    try:
        model = asyncio.run(run()) or ""
    finally:
        app.close()
    assert "Dana leads payments" in model and "job hunting" not in model
    (chat,) = honcho.requests_to("/chat", "POST")
    assert chat.body["filters"] == {"session_id": [honcho_id(sessions["public"])]}
    workspace = honcho.workspaces[honcho_id("T1")].record
    assert workspace["configuration"]["peer_card"] == {"use": False, "create": False}


def test_a_refused_key_keeps_every_turn_and_they_go_once_the_key_works(
    model_settings: Settings, hashing_embedder: HashingEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    from layers.identity.ingest_queue import IngestQueue
    from layers.identity.outbox import IngestOutbox
    from layers.identity.protocol import TurnMessages

    with FakeHoncho(api_key="hch-right-key") as honcho:
        db = open_sqlite(model_settings.db_path, schemas=LAYER_SCHEMAS)
        dana = Person("T1", "U1", "Dana")
        turns = [TurnMessages(dana, f"s-{n}", f"message {n}", "Noted.", time.time())
                 for n in range(9)]

        async def with_key(key: str) -> int:
            queue = IngestQueue(_direct_identity(honcho, db, key=key), base_delay_s=0.01,
                                outbox=Offloaded(IngestOutbox(db)))
            for turn in turns if key.endswith("rotated") else []:
                queue.submit(turn)
            await queue.resume()
            return await queue.drain(20)

        assert asyncio.run(with_key("hch-rotated")) == 9
        assert IngestOutbox(db).count() == 9  # nothing thrown away
        refusals = [r for r in caplog.records if "refused the API key" in r.getMessage()]
        assert len(refusals) == 1 and refusals[0].exc_info is None  # one line, no traceback
        assert asyncio.run(with_key("hch-right-key")) == 0
        assert IngestOutbox(db).count() == 0
        assert len(honcho.stored_messages(honcho_id("T1"), honcho_id("s-8"))) == 2
        db.close()


def test_a_person_named_by_id_alone_keeps_their_name_and_facts_show_names(
    app: Thoth, honcho: FakeHoncho
) -> None:
    import io

    from bridge.cli.main import main

    identity = app.identity
    assert identity is not None
    dana = Person("T1", "U1", "Dana")
    asyncio.run(identity.observe(dana, [f"{person_peer_id(dana)} leads payments"],
                                 session_id=None, source="reflection"))
    # `thoth people show U1` names the person by id only, in a process of its own.
    out = io.StringIO()
    assert main(["people", "show", "U1", "--team", "T1"], settings=app.settings, stdout=out,
                stderr=io.StringIO(), embedder=HashingEmbedder()) == 0
    sent = [r.body.get("metadata") for r in honcho.requests_to("/peers", "POST")
            if isinstance(r.body, dict) and r.body.get("id") == person_peer_id(dana)]
    assert sent and all(m is None or m.get("name") == "Dana" for m in sent)  # never a null
    facts = asyncio.run(identity.facts(dana))
    assert [f.text for f in facts] == ["Dana leads payments"]
    # Shown without the peer id Honcho's deriver writes.
    assert "leads payments" in out.getvalue() and person_peer_id(dana) not in out.getvalue()
