"""Each small store does the same on both engines (a real SQLite file, a real PostgreSQL):
what it keeps once, what it replaces, what it finds, what it sweeps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bridge.all_tables import ALL_SCHEMAS
from bridge.slack.duplicate_deliveries import TTL_S, SeenDeliveries, record_first_time
from bridge.slack.reaction_effects import ReactionEffects
from bridge.slack.replies import ReplyRecord, SlackReplies
from bridge.slack.thread_contexts import ThreadContexts
from bridge.slack_api.skill_cards import CardStore
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import Person, TurnMessages
from layers.identity.tombstones import DROP, RECHECK_S, SEND, Tombstones
from layers.shared.places import Place
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from layers.working.sessions import SessionStore
from layers.working.transcript import TranscriptStore, TranscriptTurn
from reflection.followups import Followups
from reflection.state import MAX_ATTEMPTS, ReflectionState

OpenDatabase = Callable[[Sequence[Schema]], Database]
# Every owner but the episodic layer, whose search differs by engine (its own tests).
SCHEMAS = [schema for schema in ALL_SCHEMAS if schema.owner != "episodic"]


def test_a_delivery_is_taken_once_and_swept_after_a_day(open_database: OpenDatabase) -> None:
    db = open_database(SCHEMAS)
    seen = SeenDeliveries(db)

    def first_time(*keys: str, now: float) -> bool:
        with db.write() as conn:
            return record_first_time(conn, keys, now)

    assert first_time("event:Ev1", "msg:C1:1.1", now=1000.0)
    assert not first_time("event:Ev1", now=1001.0)  # Slack's retry
    assert not first_time("event:Ev2", "msg:C1:1.1", now=1002.0)  # the message event
    assert first_time("event:Ev3", "", now=1003.0)  # an empty key is no key
    assert seen.sweep(now=1000.5 + TTL_S) == 2  # Ev1 and the message (Ev2's row is newer)
    assert first_time("msg:C1:1.1", now=1004.0 + TTL_S)


def test_replies_cards_and_contexts_are_replaced_not_doubled(open_database: OpenDatabase) -> None:
    db = open_database(SCHEMAS)
    replies = SlackReplies(db)
    replies.record(ReplyRecord("C1", "2.1", "T1", "2.0", "s1", None, "U1"))
    replies.record(ReplyRecord("C1", "2.1", "T1", "2.0", "s1", "ep-9", "U1"))
    replies.set_episode("C1", "2.1", "ep-1")
    assert replies.find("C1", "2.1") == ReplyRecord("C1", "2.1", "T1", "2.0", "s1", "ep-1", "U1")
    assert replies.in_thread("C1", "2.0") and not replies.in_thread("C1", "3.0")

    cards = CardStore(db)
    cards.record("d1", channel="C1", ts="4.1", thread_ts=None)
    cards.record("d2", channel="C1", ts="4.1", thread_ts="4.0")
    card = cards.find("C1", "4.1")
    assert card is not None and (card.draft_id, card.thread_ts) == ("d2", "4.0")

    contexts = ThreadContexts(db)
    for looking_at in ("C7", "C8"):
        context = {"team_id": "T1", "channel_id": looking_at}
        contexts.keep({"assistant_thread": {"channel_id": "D1", "thread_ts": "5.0",
                                            "user_id": "U1", "context": context}})
    kept = contexts.find("D1", "5.0")
    assert kept is not None and (kept.user, kept.channel) == ("U1", "C8")


def test_reaction_effects_are_kept_per_person_and_undone_exactly(
    open_database: OpenDatabase,
) -> None:
    effects = ReactionEffects(open_database(SCHEMAS))
    effects.keep("C1", "6.1", "brain", "U1", "- a note")
    effects.keep("C1", "6.1", "brain", "U1", "- the note")  # the same reaction again
    effects.keep("C1", "6.1", "x", "U2", "x")
    effects.keep("C1", "6.1", "feedback_button", "U3", "white_check_mark")
    assert effects.standing("C1", "6.1", ("white_check_mark", "x"), clicks="feedback_button") == {
        "x", "white_check_mark"}
    assert effects.any_with("brain", "- the note") and not effects.any_with("brain", "- a note")
    assert effects.pop("C1", "6.1", "brain", "U1") == "- the note"
    assert effects.pop("C1", "6.1", "brain", "U1") is None


def test_follow_ups_are_planned_once_posted_once_and_cancelled_by_thread(
    open_database: OpenDatabase,
) -> None:
    db = open_database(SCHEMAS)
    sessions, followups = SessionStore(db), Followups(db)
    session = sessions.open("slack:T1:C1:7.0", Place("T1", "C1", "public", "7.0"), now=100.0)
    TranscriptStore(db).append(session.id, TranscriptTurn("check on the deploy", "ok", user="U1"))
    followups.schedule(session, "Did the deploy go out?", due_at=200.0, now=100.0)
    followups.schedule(session, "Another text", due_at=150.0, now=101.0)  # changes nothing
    assert followups.claim_due(199.0, hold_s=60) == []
    (due,) = followups.claim_due(200.0, hold_s=60)
    assert (due.session_id, due.text) == (session.id, "Did the deploy go out?")
    (mine,) = followups.open_for(team="T1", user="U1", dm_channel="D1", shared_channel=None,
                                 limit=2)
    assert mine.session_id == session.id
    assert followups.open_for(team="T1", user="U2", dm_channel="D2", shared_channel=None,
                              limit=2) == []  # U2 never spoke there
    followups.mark_sent(session.id, 201.0)
    assert followups.claim_due(300.0, hold_s=60) == []
    assert followups.cancel(channel="C1", thread_ts="7.0") == 0


def test_a_reflection_is_queued_once_claimed_once_and_retried_with_backoff(
    open_database: OpenDatabase,
) -> None:
    now = [1000.0]
    state = ReflectionState(open_database(SCHEMAS), run_timeout_s=600, clock=lambda: now[0])
    assert state.queue("s1") and not state.queue("s1")
    claimed = state.claim("s1")
    assert claimed is not None and claimed.attempts == 1
    assert state.claim("s1") is None  # running, and not yet dead
    state.finish("s1", error="the model timed out")
    assert state.due() == []  # failed just now: it waits before the next attempt
    now[0] += 3600
    assert state.due() == ["s1"]
    state.postpone("s1", reason="daily cost cap")  # a cap is no failure: attempt given back
    row = state.get("s1")
    assert row is not None and row.attempts == 0 and row.state == "failed"
    state.mark_written("s1", "memory_notes", "2 notes")
    state.mark_written("s1", "memory_notes", "again")  # recorded once
    assert state.written("s1") == {"memory_notes"}
    for _ in range(MAX_ATTEMPTS):
        now[0] += 10**6
        assert state.claim("s1") is not None
        state.finish("s1", error="still failing")
    assert state.gave_up() == ["s1"] and state.counts() == {"failed": 1}


def test_the_identity_outbox_numbers_and_keeps_turns_in_order(
    open_database: OpenDatabase,
) -> None:
    outbox = IngestOutbox(open_database(SCHEMAS))
    dana = Person("T1", "U1", "dana")
    first = outbox.add(TurnMessages(dana, "s1", "I prefer short answers", "Noted.", 1.0))
    second = outbox.add(TurnMessages(dana, "s1", "I work on payments", "Noted.", 2.0))
    assert second > first
    assert [turn.user_text for _, turn in outbox.claim(hold_s=0)] == [
        "I prefer short answers", "I work on payments"]
    outbox.remove(first)
    assert outbox.count() == 1 and outbox.claim(hold_s=0)[0][1].person == dana


def test_a_forget_drops_earlier_turns_holds_later_ones_and_frees_them_once_swept(
    open_database: OpenDatabase,
) -> None:
    db = open_database(SCHEMAS)
    clock = [1_000.0]
    tombstones = Tombstones(db, settle_s=600, clock=lambda: clock[0])
    outbox = IngestOutbox(db, clock=lambda: clock[0])
    dana, lee = Person("T1", "U1", "dana"), Person("T1", "U2", "lee")
    outbox.add(TurnMessages(dana, "s1", "I prefer tea", "Noted.", 900.0))
    outbox.add(TurnMessages(lee, "s1", "I prefer coffee", "Noted.", 900.0))
    assert tombstones.record(dana) == 1_000.0
    (left,) = outbox.claim(hold_s=0)
    assert left[1].person == lee  # hers went with the forget
    outbox.remove(left[0])
    before, after = (TurnMessages(dana, "s1", text, "Noted.", at)
                     for text, at in (("old", 990.0), ("new", 1_010.0)))
    assert tombstones.fate(before) == DROP
    assert tombstones.fate(after).wait_until == 1_600.0  # until the sweep
    waiting = outbox.add(after)
    outbox.hold(waiting, 1_600.0)
    assert tombstones.due() == [] and tombstones.said_before_forget(dana, 1_010.0)
    clock[0] = 1_700.0  # the sweep is overdue: a turn met now waits a minute more
    assert tombstones.fate(after).wait_until == 1_700.0 + RECHECK_S
    (stone,) = tombstones.due()
    assert stone.person.key == dana.key and stone.forgotten_at == 1_000.0
    outbox.hold(waiting, 1_700.0 + RECHECK_S)
    tombstones.mark_swept(stone)
    assert tombstones.due() == [] and tombstones.fate(after) == SEND
    assert not tombstones.said_before_forget(dana, 1_010.0)
    assert [turn.user_text for _, turn in outbox.claim(hold_s=0)] == ["new"]  # freed at once
    # Without a settling time (the local backend) nothing waits.
    assert Tombstones(db, clock=lambda: clock[0]).record(lee) == 1_700.0
    assert Tombstones(db).fate(TurnMessages(lee, "s1", "hi", "Hi.", 1_800.0)) == SEND


def test_spend_is_summed_per_day_person_and_channel_and_the_audit_log_only_grows(
    open_database: OpenDatabase,
) -> None:
    from bridge.model.cost_ledger import CostLedger
    from bridge.model.pricing import Usage
    from bridge.model.spend_report import DAY_S, SpendReader
    from layers.shared.audit.log import AuditLog

    db = open_database(ALL_SCHEMAS)
    sessions = SessionStore(db)
    general = sessions.open("k1", Place("T1", "C1", "public", "1.0"))
    ops = sessions.open("k2", Place("T1", "C2", "private", "2.0"))
    ledger = CostLedger(db)
    today = 20_000 * DAY_S + 3600.0  # 01:00 UTC
    calls = [("m", Usage(10, 10), 0.25)]
    ledger.record_all(calls, session_id=general.id, person="U1", now=today)
    ledger.record_all(calls, session_id=ops.id, person="U2", now=today + 7200)
    ledger.record_all(calls, session_id=general.id, person="U1", now=today - DAY_S)
    ledger.record_all(calls, session_id=ops.id, purpose="reflection", now=today - 40 * DAY_S)
    report = SpendReader(db).report(days=30, now=today + 60)
    assert [(d.label, d.calls, d.cost_usd) for d in report.days] == [
        ("2024-10-04", 2, 0.5), ("2024-10-03", 1, 0.25)]  # the 40-day-old call is out
    assert [(p.label, p.calls) for p in report.people] == [("U1", 2), ("U2", 1)]
    assert {c.label: c.calls for c in report.channels} == {"T1 C1": 2, "T1 C2": 1}
    assert report.total_usd == 0.75

    audit = AuditLog(db, clock=lambda: today)
    audit.record(actor="operator", action="note.keep", target="note:n1", origin="console")
    audit.record(actor="slack:U1", action="episode.forget", target="episode:e1",
                 origin="slack", detail="token ghp_" + "a" * 36)
    newest, oldest = audit.entries()
    assert (newest.action, oldest.action) == ("episode.forget", "note.keep")
    assert "ghp_" not in newest.detail  # redacted like everything stored
    assert audit.entries(action="note") == [oldest]
    assert audit.entries(before_id=newest.id) == [oldest]
    # A read's line, committed without waiting for the disk, is kept all the same.
    read = audit.record(actor="T1:U1", action="mcp.recall", target="launch", origin="mcp",
                        durable=False)
    assert audit.entries(action="mcp") == [read]


def test_notes_are_counted_by_status_past_a_listing_page(open_database: OpenDatabase) -> None:
    from layers.notes.store import NoteStore

    store = NoteStore(open_database(ALL_SCHEMAS))
    place = Place("T1", "C1", "public")
    made = [store.propose(f"standing fact number {n}", place, user="U1", author_name="dana",
                          source="test", session_id=None) for n in range(203)]
    store.decide(made[0].id, "kept", by="fia")
    assert len(store.listed("proposed")) == 200  # a page
    assert store.counts() == {"proposed": 202, "kept": 1, "rejected": 0, "replaced": 0}


def test_an_mcp_sign_in_renews_once_and_its_grants_work_once(
    open_database: OpenDatabase,
) -> None:
    from mcp.shared.auth import OAuthClientInformationFull

    from bridge.access.tokens import McpTokens
    from bridge.mcp.oauth_grants import OAuthGrants
    from layers.shared.audit.log import AuditLog

    db = open_database(ALL_SCHEMAS)
    now = [1_000.0]
    grants = OAuthGrants(db, clock=lambda: now[0])
    client = OAuthClientInformationFull(client_id="c1", client_name="Claude Code",
                                        redirect_uris=["http://127.0.0.1:1/cb"])  # type: ignore[list-item]
    grants.register(client)
    assert grants.client("c1") == client and grants.client("c2") is None
    grants.put("code", "the-code", {"client_id": "c1"}, ttl_s=300)
    assert grants.peek("code", "the-code") == {"client_id": "c1"}
    assert grants.peek("consent", "the-code") is None  # a grant of another stage
    assert grants.take("code", "the-code") == {"client_id": "c1"}
    assert grants.take("code", "the-code") is None  # used once
    grants.put("slack", "a-state", {}, ttl_s=600)
    now[0] += 601
    assert grants.take("slack", "a-state") is None  # lapsed

    tokens = McpTokens(db, AuditLog(db), clock=lambda: now[0])
    signed = tokens.signed_in("T1", "U1", client_id="c1", client_name="Claude Code",
                              origin="test")
    assert tokens.holder(signed.access) == signed.token
    assert tokens.of_refresh(signed.refresh, "c2") is None  # another client's
    renewed = tokens.refreshed_by(signed.refresh, "c1")
    assert renewed is not None and tokens.holder(renewed.access) is not None
    assert tokens.holder(signed.access) is None  # replaced in the same row
    assert tokens.refreshed_by(signed.refresh, "c1") is None
    # That spent refresh token, shown again, ended the sign-in.
    assert tokens.holder(renewed.access) is None
    assert tokens.of_refresh(renewed.refresh, "c1") is None
    now[0] += 3600
    lapsed = tokens.signed_in("T1", "U1", client_id="c1", client_name="x", origin="test")
    now[0] += 3601
    assert tokens.holder(lapsed.access) is None  # an hour on
