"""Routines run in Slack by the clock a test moves (``RoutineRunner.tick(now)`` on the
bridge's own loop), through the real Bolt app, the real async WebClient against the
loopback Slack and the real anthropic SDK against the loopback model: a run is a turn of
its creator's posted in its place with a line saying whose it is, run once whichever
replica or worker looks, recalling only what the creator may read there, refused by the
cost cap without a post, and paused when its creator is deactivated, when Thoth is
removed from its channel, or when Slack refuses the post for good."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bridge.app import build
from bridge.routines.running import RoutineRunner
from bridge.routines.store import Routine, RoutineStore
from bridge.settings import Settings
from bridge.team_tools.grants import Grants
from layers.episodic.episode import Episode
from layers.shared.audit.log import AuditLog
from layers.shared.offloaded import Offloaded
from layers.shared.places import Place
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import CHANNEL, Harness, running_bridge, shown
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

GENERAL = Place("T1", CHANNEL, "public", None, "general")
MONDAY_9 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
JUST_AFTER = MONDAY_9 + timedelta(seconds=5)


def _made(h: Harness, place: Place = GENERAL, creator: str = "U1",
          instruction: str = "post yesterday's decisions",
          first: datetime = MONDAY_9) -> Routine:
    return RoutineStore(h.thoth.db).create(place, creator, "dana", instruction,
                                           "0 9 * * 1-5", "Europe/London", first.timestamp())


def _runner(h: Harness, owner: str = "replica-a") -> RoutineRunner:
    runner = h.thoth.routine_runner(owner=owner)
    assert runner is not None
    return runner


def _tick(h: Harness, runner: RoutineRunner, now: datetime = JUST_AFTER) -> int:
    """A tick on the bridge's own loop, as `thoth serve`'s scheduler job runs it."""
    return h.bridge.runner.call(runner.tick(now), 30)


def _posted(h: Harness, channel: str = CHANNEL) -> list[dict[str, Any]]:
    return [m for m in h.slack.messages(channel) if m.get("user") == "UBOT"]


def _context_line(message: dict[str, Any]) -> str:
    return "".join(element["text"] for block in message.get("blocks") or []
                   if block["type"] == "context" for element in block["elements"])


def _routine(h: Harness, routine_id: str) -> Routine:
    kept = RoutineStore(h.thoth.db).get(routine_id)
    assert kept is not None
    return kept


def test_a_due_routine_posts_once_in_its_channel_with_whose_it_is(harness: Harness) -> None:
    h = harness
    routine = _made(h)
    runner = _runner(h)
    h.model.push(api.text("Yesterday we decided to ship on Tuesday."))
    assert _tick(h, runner, MONDAY_9 - timedelta(minutes=1)) == 0
    assert _tick(h, runner) == 1
    assert _tick(h, runner, MONDAY_9 + timedelta(minutes=1)) == 0
    (post,) = _posted(h)
    assert shown(post) == "Yesterday we decided to ship on Tuesday."
    assert _context_line(post) == "Routine by <@U1> · post yesterday's decisions"
    (run,) = RoutineStore(h.thoth.db).runs_of(routine.id)
    assert (run.outcome, run.posted_ts) == ("posted", post["ts"])
    # The model was told it is a scheduled run no one waits on, and what the routine says.
    (request,) = h.model.requests
    words = request.conversation()[-1]["content"]
    assert "scheduled run" in words and "No one is waiting" in words
    assert words.endswith("post yesterday's decisions")
    assert [e.action for e in AuditLog(h.thoth.db).entries(action="routine.run")] == [
        "routine.run"]


def test_a_routine_made_in_a_thread_posts_in_that_thread(harness: Harness) -> None:
    h = harness
    h.slack.add_message(CHANNEL, "the standup", ts="1764000000.000100")
    _made(h, Place("T1", CHANNEL, "public", "1764000000.000100", "general"))
    h.model.push(api.text("Standup: two deploys today."))
    _tick(h, _runner(h))
    (post,) = h.replies_in("1764000000.000100")
    assert shown(post) == "Standup: two deploys today."
    assert post.get("thread_ts") == "1764000000.000100"


def test_two_replicas_and_a_worker_looking_at_once_post_it_once(
    harness: Harness, hashing_embedder: HashingEmbedder,
) -> None:
    h = harness
    routine = _made(h)
    # The worker: a process of its own on the same database.
    worker = build(h.thoth.settings, embedder=hashing_embedder)
    try:
        looking = [_runner(h, "replica-a"), _runner(h, "replica-b"),
                   worker.routine_runner(owner="worker")]

        async def together() -> list[int]:
            return list(await asyncio.gather(*(r.tick(JUST_AFTER) for r in looking
                                               if r is not None)))

        assert sorted(h.bridge.runner.call(together(), 30)) == [0, 0, 1]
    finally:
        h.bridge.runner.call(worker.drain(), 30)
        worker.close()
    assert len(_posted(h)) == 1
    assert len(h.model.requests) == 1
    assert [run.outcome for run in RoutineStore(h.thoth.db).runs_of(routine.id)] == ["posted"]


def test_a_worker_looks_for_routines_every_half_minute(harness: Harness) -> None:
    from bridge.worker.worker import Queues, Worker

    h = harness
    a_minute_ago = datetime.now(UTC) - timedelta(minutes=1)
    _made(h, first=a_minute_ago)
    worker = Worker(Queues(reflections=None, launch=lambda _session, _summary: 0,
                           outbox=None, identity=None,
                           followups=Offloaded(h.thoth.followups), slack=None,
                           routines=_runner(h, "worker")))
    assert "routines" in worker.jobs()
    # The worker looks by the real clock: the first look runs it, and the next
    # look, at once after one that found something, finds nothing; then it waits.
    assert h.bridge.runner.call(worker.routines_once(), 30) == 1
    assert h.bridge.runner.call(worker.routines_once(), 30) == 0
    _made(h, first=a_minute_ago)
    assert h.bridge.runner.call(worker.routines_once(), 30) == 0  # not looked: too soon
    assert len(_posted(h)) == 1


def test_a_channel_routine_never_recalls_its_creators_dms(harness: Harness) -> None:
    h = harness
    h.thoth.episodic.remember([
        Episode("in-a-dm", "zebra project: my salary is 123456, keep it between us",
                "Kept.", created_at=MONDAY_9.timestamp() - 3600, team="T1", channel="D1",
                channel_type="im", user="U1", user_name="dana"),
        Episode("in-general", "zebra project: the launch moved to Thursday",
                "Noted.", created_at=MONDAY_9.timestamp() - 3600, team="T1",
                channel=CHANNEL, channel_type="public", user="U1", user_name="dana"),
    ])
    _made(h, instruction="post what we know about the zebra project")
    _tick(h, _runner(h))
    (request,) = h.model.requests
    sent = json.dumps(request.body)
    assert "launch moved to Thursday" in sent  # the channel's own memory is recalled
    assert "123456" not in sent


def test_a_dm_routine_recalls_its_creators_dms(harness: Harness) -> None:
    h = harness
    h.thoth.episodic.remember([
        Episode("in-a-dm", "zebra project: my salary is 123456, keep it between us",
                "Kept.", created_at=MONDAY_9.timestamp() - 3600, team="T1", channel="D1",
                channel_type="im", user="U1", user_name="dana")])
    h.slack.add_channel("D1", "dana", kind="im")
    _made(h, Place("T1", "D1", "im", None, None),
          instruction="remind me what I said about the zebra project")
    _tick(h, _runner(h))
    (request,) = h.model.requests
    assert "123456" in json.dumps(request.body)
    assert len(_posted(h, "D1")) == 1


@pytest.fixture
def capped(model_settings: Settings, fake_anthropic: FakeAnthropic,
           hashing_embedder: HashingEmbedder) -> Iterator[Harness]:
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        daily_cost_cap_usd=0.0) as running:
        yield running


def test_a_run_past_the_daily_cost_cap_fails_and_posts_nothing(capped: Harness) -> None:
    routine = _made(capped)
    assert _tick(capped, _runner(capped)) == 1
    assert _posted(capped) == []
    assert capped.model.requests == []
    (run,) = RoutineStore(capped.thoth.db).runs_of(routine.id)
    assert run.outcome == "failed" and "spending limit" in (run.detail or "")
    assert _routine(capped, routine.id).state == "active"  # tomorrow it may run
    (failed,) = AuditLog(capped.thoth.db).entries(action="routine.failed")
    assert "spending limit" in failed.detail


def test_a_deactivated_creators_routines_pause(harness: Harness) -> None:
    h = harness
    theirs, others = _made(h), _made(h, creator="U2")
    assert h.event({"type": "user_change", "user": {"id": "U1", "name": "dana",
                                                    "deleted": True}}) == 200
    wait_until(lambda: _routine(h, theirs.id).state == "paused")
    assert _routine(h, theirs.id).paused_why == "its creator was deactivated"
    assert _routine(h, others.id).state == "active"
    (paused,) = AuditLog(h.thoth.db).entries(action="routine.pause")
    assert paused.target == f"routine:{theirs.id}" and paused.origin.startswith("user_change")
    # Paused, it is not run.
    assert _tick(h, _runner(h)) == 1 and len(_posted(h)) == 1
    assert [run.routine_id for run in RoutineStore(h.thoth.db).runs_of(theirs.id)] == []


def test_thoth_removed_from_a_channel_pauses_the_routines_posting_there(
    harness: Harness,
) -> None:
    h = harness
    h.slack.add_channel("G1", "secret-ops", kind="private")
    general, ops = _made(h), _made(h, Place("T1", "G1", "private", None, "secret-ops"))
    h.event({"type": "channel_left", "channel": CHANNEL, "actor_id": "U2"})
    wait_until(lambda: _routine(h, general.id).state == "paused")
    assert _routine(h, general.id).paused_why == "Thoth was removed from its channel"
    assert _routine(h, ops.id).state == "active"
    h.event({"type": "group_left", "channel": "G1", "actor_id": "U2"})
    # Each pause's audit line is written just after it: both, once both are there.
    paused = wait_until(lambda: len(lines := AuditLog(h.thoth.db).entries(
        action="routine.pause")) == 2 and lines)
    assert {(e.target, e.origin) for e in paused} == {(f"routine:{ops.id}", "group_left"),
                                                      (f"routine:{general.id}", "channel_left")}


def test_a_channel_slack_refuses_pauses_the_routine_saying_why(harness: Harness) -> None:
    h = harness
    h.slack.add_channel("C2", "ops", is_member=False)  # public, and Thoth is not in it
    routine = _made(h, Place("T1", "C2", "public", None, "ops"))
    h.model.push(api.text("The ops digest."))
    assert _tick(h, _runner(h)) == 1
    assert _posted(h, "C2") == []
    (run,) = RoutineStore(h.thoth.db).runs_of(routine.id)
    assert run.outcome == "failed" and "not_in_channel" in (run.detail or "")
    kept = _routine(h, routine.id)
    assert (kept.state, kept.paused_why) == ("paused", "Thoth can no longer post in #ops")
    (paused,) = AuditLog(h.thoth.db).entries(action="routine.pause")
    assert "Thoth can no longer post in #ops" in paused.detail


@pytest.fixture
def with_tools(model_settings: Settings, fake_anthropic: FakeAnthropic,
               hashing_embedder: HashingEmbedder, everything: str,
               tmp_path: Path) -> Iterator[Harness]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {
        "command": everything, "args": ["stdio"], "tools": {"include": ["echo"]}}}}))
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        mcp_config=config) as running:
        yield running


def test_an_unattended_run_never_waits_on_a_card_but_uses_what_its_creator_always_allows(
    with_tools: Harness,
) -> None:
    h = with_tools
    routine = _made(h)
    runner = _runner(h)

    def tool_result(request: int) -> str:
        (result,) = h.model.requests[request].body["messages"][-1]["content"]
        return str(result["content"])

    # echo is not read-only: with no one to ask, it does not run, and nothing waits.
    h.model.push(api.tool_use("everything__echo", {"message": "hello"}), api.text("Could not."))
    assert _tick(h, runner) == 1
    assert "no one can be asked" in tool_result(-1)
    assert not any(m.get("blocks") and "Allow once" in json.dumps(m["blocks"])
                   for m in h.slack.messages(CHANNEL))
    # dana always allows echo: the next run uses it.
    Grants(h.thoth.db).grant("T1", "U1", "everything", "echo")
    h.model.push(api.tool_use("everything__echo", {"message": "hello"}), api.text("Echoed."))
    assert _tick(h, runner, MONDAY_9 + timedelta(days=1, seconds=5)) == 1
    assert tool_result(-1) == "Echo: hello"
    assert [run.outcome for run in RoutineStore(h.thoth.db).runs_of(routine.id)] == [
        "posted", "posted"]


def test_a_routine_in_a_channel_shared_with_another_org_recalls_only_that_channel(
    harness: Harness,
) -> None:
    h = harness
    h.slack.add_channel("C0SHARED01", "with-acme", is_ext_shared=True)
    h.thoth.episodic.remember([
        Episode("in-general", "zebra project: the launch moved to Thursday", "Noted.",
                created_at=MONDAY_9.timestamp() - 3600, team="T1", channel=CHANNEL,
                channel_type="public", user="U1", user_name="dana"),
        Episode("in-shared", "zebra project: acme signs the contract Friday", "Noted.",
                created_at=MONDAY_9.timestamp() - 3600, team="T1", channel="C0SHARED01",
                channel_type="public", user="U1", user_name="dana"),
    ])
    _made(h, Place("T1", "C0SHARED01", "public", None, "with-acme"),
          instruction="post what we know about the zebra project")
    _tick(h, _runner(h))
    (request,) = h.model.requests
    sent = json.dumps(request.body)
    # What the other organisation reads there is that channel's own memory, never the
    # workspace's other public channels.
    assert "acme signs the contract" in sent
    assert "launch moved to Thursday" not in sent


def test_checked_at_each_run_a_gone_creator_or_a_left_channel_pauses_it(
    harness: Harness,
) -> None:
    h = harness
    h.slack.add_channel("G0SECRET01", "secret", "private", members=["UBOT", "U2"])
    left = _made(h, Place("T1", "G0SECRET01", "private", None, "secret"))
    assert _tick(h, _runner(h)) == 1
    assert _routine(h, left.id).paused_why == "its creator left #secret"
    gone = _made(h, first=MONDAY_9 + timedelta(days=1))
    h.slack.add_user("U1", "dana", deleted=True)  # a user_change Thoth never heard
    assert _tick(h, _runner(h), MONDAY_9 + timedelta(days=1, seconds=5)) == 1
    assert _routine(h, gone.id).paused_why == "its creator was deactivated"
    assert h.model.requests == [] and _posted(h) == []
