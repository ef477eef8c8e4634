"""Fault 2 of issue 55: the model's API overloaded (529, 500, connection resets).

Real parts throughout: signed deliveries over HTTP to the real Bolt app, the real
anthropic SDK against the loopback Messages API taught to be overloaded for a while
(``FakeAnthropic.overloaded_for``) and to reset connections (``reset_next``), the loopback
Slack Web API, a real SQLite database. What each test shows:

- a burst during the overload: each message gets one line ("Claude is overloaded; I will
  answer when it is back"), the API is not hammered (one call's tries, not one per
  turn), nothing is recorded; once the API is back each is answered once, by one of two
  jobs racing for the queue, the transcript holds each message and its answer once, the
  ledger holds what the API billed, and health says "model" failing then working;
- a reset before or in the middle of a response is retried, never billed twice;
- the API's retry-after is honoured within the call's budget.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from functools import partial

import pytest

from bridge import messages
from bridge.app import Thoth, build
from bridge.model.metered import MeteredModel
from bridge.model.retrying import RetryingModel
from bridge.pipeline.answer_later_job import AnswerLaterJob
from bridge.pipeline.answer_later_store import AnswerLaterStore
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from bridge.slack_api.answer_later_posts import slack_answer_later_job
from layers.shared.dependency_health import MODEL
from layers.shared.places import Place
from layers.working.transcript import TranscriptTurn
from tests.fakes import HashingEmbedder, RecordingSink
from tests.integration.slack_harness import CHANNEL, Harness, running_bridge, shown
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

BURST = 6
OVERLOADED = messages.MODEL_OVERLOADED_LATER


@pytest.fixture
def overloaded_bridge(model_settings: Settings, fake_anthropic: FakeAnthropic,
                      hashing_embedder: HashingEmbedder) -> Iterator[Harness]:
    """The bridge with a call's retries bounded to a second and a probe every 0.3 s."""
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        model_retry_budget_s=1.0, model_probe_every_s=0.3) as running:
        yield running


def _said(h: Harness, thread_ts: str) -> list[str]:
    """What the agent posted in the thread, in order (a stream once it stopped)."""
    said = []
    for message in h.replies_in(thread_ts):
        stream = h.slack.stream(CHANNEL, message["ts"])
        if (stream is None or stream["state"] == "stopped") and shown(message):
            said.append(shown(message))
    return said


def _job(h: Harness, owner: str) -> AnswerLaterJob:
    """A serve replica's answer-later job (what its scheduler runs), as process ``owner``."""
    client = h.thoth.slack.client
    assert client is not None
    metered = h.thoth.pipeline.model
    assert isinstance(metered, MeteredModel) and isinstance(metered.inner, RetryingModel)
    circuit = metered.inner.circuit
    return slack_answer_later_job(
        h.thoth.pipeline, h.thoth.db, client, owner=owner, workspace_of=None,
        ready=circuit.readiness, probe_every_s=0.3)


def _run_jobs(h: Harness, *jobs: AnswerLaterJob) -> list[str]:
    async def together() -> list[str]:
        rounds = await asyncio.gather(*(job() for job in jobs))
        return [key for answered in rounds for key in answered]

    return h.bridge.runner.call(together(), timeout_s=60)


def _ledger(thoth: Thoth) -> tuple[int, int, int]:
    with thoth.db.read() as conn:
        rows, tokens_in, tokens_out = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)"
            " FROM model_usage").fetchone()
    return int(rows), int(tokens_in), int(tokens_out)


def _billed(fake: FakeAnthropic) -> tuple[int, int, int]:
    return (len(fake.billed), sum(u.input_tokens for u in fake.billed),
            sum(u.output_tokens for u in fake.billed))


def test_a_burst_while_overloaded_is_told_once_then_answered_once_when_it_is_back(
    overloaded_bridge: Harness, fake_anthropic: FakeAnthropic,
) -> None:
    h = overloaded_bridge
    fake_anthropic.overloaded_for(60, status=529)
    threads = [f"1700000{n:03d}.000100" for n in range(BURST)]
    for n, ts in enumerate(threads):
        assert h.mention(f"question number {n} about the roadmap", ts) == 200

    for ts in threads:
        assert wait_until(partial(_said, h, ts)) == [OVERLOADED]
    # One call retried for all of them; the others waited for it, then were queued: about
    # one first try each (those sent before the circuit opened) and the probe's retries,
    # far from a full round of four tries each.
    assert fake_anthropic.overloaded_answers <= 2 * BURST < BURST * 4
    assert h.thoth.health.is_failing(MODEL)
    assert "model" in h.thoth.health.summary()
    store = AnswerLaterStore(h.thoth.db, owner="test")
    assert store.waiting() == BURST
    # Nothing of a queued turn is kept yet: no transcript turn, no episode.
    with h.thoth.db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM transcript_turns").fetchone()[0] == 0
    assert h.thoth.episodic.store.count() == 0

    # Still overloaded: a round sends one probe at most, answers nothing.
    time.sleep(0.35)
    before = len(fake_anthropic.requests)
    assert _run_jobs(h, _job(h, "replica-a")) == []
    assert len(fake_anthropic.requests) - before <= 1
    assert store.waiting() == BURST

    fake_anthropic.back()
    time.sleep(0.35)  # the next probe is due
    # Two replicas' jobs race for the queue, round after round, as their schedulers would.
    answered: list[str] = []
    jobs = _job(h, "replica-a"), _job(h, "replica-b")

    def a_round() -> bool:
        answered.extend(_run_jobs(h, *jobs))
        return store.waiting() == 0

    wait_until(a_round, timeout_s=10)
    assert sorted(answered) == sorted(f"slack:T1:{CHANNEL}:{ts}" for ts in threads)
    assert store.waiting() == 0
    for n, ts in enumerate(threads):
        said = _said(h, ts)
        assert said[0] == OVERLOADED and len(said) == 2
        assert said[1].startswith("You said:") and f"number {n}" in said[1]
    # The transcript holds each message once, with its answer once.
    with h.thoth.db.read() as conn:
        kept = conn.execute("SELECT user_text, ok FROM transcript_turns").fetchall()
    assert sorted(text for text, _ in kept) == sorted(
        f"question number {n} about the roadmap" for n in range(BURST))
    assert all(ok for _, ok in kept)
    wait_until(lambda: h.thoth.episodic.store.count() == BURST)
    # The ledger holds what the API billed: the answers, not the 529s.
    assert _ledger(h.thoth) == _billed(fake_anthropic)
    assert not h.thoth.health.is_failing(MODEL)
    # Nothing is answered twice: another round finds nothing.
    assert _run_jobs(h, _job(h, "replica-a")) == []
    assert all(len(_said(h, ts)) == 2 for ts in threads)


def test_a_message_in_a_thread_with_one_queued_waits_behind_it(
    overloaded_bridge: Harness, fake_anthropic: FakeAnthropic,
) -> None:
    h = overloaded_bridge
    fake_anthropic.overloaded_for(60, status=500, retry_after=0.1)
    thread = "1700001000.000100"
    assert h.mention("first question", thread) == 200
    wait_until(lambda: _said(h, thread) == [OVERLOADED])
    fake_anthropic.back()
    assert h.mention("second question", "1700001001.000100", thread_ts=thread) == 200
    wait_until(lambda: _said(h, thread) == [OVERLOADED, OVERLOADED])

    job = _job(h, "replica-a")
    wait_until(lambda: not _run_jobs(h, job) and len(_said(h, thread)) == 4, timeout_s=10)
    said = _said(h, thread)
    assert len(said) == 4 and "first question" in said[2] and "second question" in said[3]
    session = h.thoth.sessions.find_open(f"slack:T1:{CHANNEL}:{thread}")
    assert session is not None
    assert [t.user_text for t in h.thoth.transcript.turns(session.id)] == [
        "first question", "second question"]


@pytest.fixture
def app(model_settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(model_settings.model_copy(update={"model_retry_budget_s": 5.0}),
                  embedder=hashing_embedder)
    yield thoth
    thoth.close()


def _ask(app: Thoth, text: str) -> tuple[bool, str]:
    turn = Turn("terminal:one", text, Place())
    outcome = asyncio.run(app.pipeline.handle(turn, RecordingSink()))
    return outcome.ok, outcome.reply


def test_a_connection_reset_before_or_during_a_response_is_retried_and_billed_once(
    app: Thoth, fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.reset_next(1)
    fake_anthropic.push(api.text("Here it is, whole."))
    assert _ask(app, "Are you there?") == (True, "Here it is, whole.")
    assert fake_anthropic.resets_done == 1 and len(fake_anthropic.requests) == 2

    fake_anthropic.reset_next(1, mid_stream=True)
    fake_anthropic.push(api.text("a reply cut by a reset"), api.text("The second try."))
    assert _ask(app, "Again?") == (True, "The second try.")
    assert fake_anthropic.resets_done == 2
    assert _ledger(app) == _billed(fake_anthropic)
    assert len(fake_anthropic.billed) == 2


def test_retry_after_is_honoured_within_the_budget(
    app: Thoth, fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.overloaded_for(0.4, status=529, retry_after=0.8)
    started = time.monotonic()
    assert _ask(app, "Are you there?")[0]
    waited = time.monotonic() - started
    assert waited >= 0.8
    first, second = fake_anthropic.requests[0], fake_anthropic.requests[1]
    assert second.received_at - first.received_at >= 0.8
    assert len(fake_anthropic.requests) == 2
    assert not app.health.is_failing(MODEL)


def test_a_retry_after_past_the_budget_gives_up_at_once(
    app: Thoth, fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.overloaded_for(30, status=529, retry_after=60)
    started = time.monotonic()
    ok, reply = _ask(app, "Are you there?")
    assert not ok and "60 seconds" in reply  # a terminal turn is told, not queued
    assert time.monotonic() - started < 2 and len(fake_anthropic.requests) == 1
    assert app.health.is_failing(MODEL)
    # The next call is not sent before the API's retry-after: refused at once.
    ok, _ = _ask(app, "And now?")
    assert not ok and len(fake_anthropic.requests) == 1


def test_a_turn_whose_tool_ran_before_the_overload_is_told_not_queued(
    overloaded_bridge: Harness, fake_anthropic: FakeAnthropic,
) -> None:
    """Run again from the start it would run its tool again: told it failed, as before."""
    h = overloaded_bridge
    # The tool's round, then the API overloaded for every try the budget allows.
    fake_anthropic.push(api.tool_use("recall", {"query": "deploy day"}),
                        *[api.error(529, retry_after=None)] * 4)
    thread = "1700002000.000100"
    assert h.mention("when do we deploy?", thread) == 200
    said = wait_until(lambda: _said(h, thread))
    assert said == [messages.MODEL_FAILED]
    assert AnswerLaterStore(h.thoth.db, owner="test").waiting() == 0
    session = h.thoth.sessions.find_open(f"slack:T1:{CHANNEL}:{thread}")
    assert session is not None
    (kept,) = h.thoth.transcript.turns(session.id)
    assert kept.user_text == "when do we deploy?" and not kept.ok


def test_a_queued_turn_recorded_by_a_process_that_died_is_posted_not_asked_again(
    overloaded_bridge: Harness, fake_anthropic: FakeAnthropic,
) -> None:
    """The process answering it recorded the turn, then died before posting: the next
    one posts the recorded reply, and the model is not asked (nor billed) twice."""
    h = overloaded_bridge
    fake_anthropic.overloaded_for(60, status=529)
    thread = "1700003000.000100"
    assert h.mention("what did we decide?", thread) == 200
    wait_until(lambda: _said(h, thread) == [OVERLOADED])
    fake_anthropic.back()
    key = f"slack:T1:{CHANNEL}:{thread}"
    session = h.thoth.sessions.open(key, Place("T1", CHANNEL, "public", thread))
    # Recorded as the pipeline records it: the turn's words at the moment it was received.
    with h.thoth.db.read() as conn:
        (queued,) = conn.execute("SELECT turn FROM answer_later").fetchone()
    received_at = float(json.loads(queued)["received_at"])
    h.thoth.transcript.append(session.id, TranscriptTurn(
        "what did we decide?", "We decided to ship on Friday.", ok=True, user="U1",
        created_at=received_at))
    asked = len(fake_anthropic.requests)

    time.sleep(0.35)
    job = _job(h, "replica-b")
    wait_until(lambda: _run_jobs(h, job) == [key], timeout_s=10)
    assert _said(h, thread) == [OVERLOADED, "We decided to ship on Friday."]
    assert len(fake_anthropic.requests) == asked
    assert len(h.thoth.transcript.turns(session.id)) == 1
