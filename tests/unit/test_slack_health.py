"""Slack's health as one client's calls find it (bridge/slack_api/slack_health.py): one
"failing" and one "back" per outage, however its calls interleave."""

from __future__ import annotations

import asyncio

from bridge.slack_api.slack_health import SlackHealth
from layers.shared.dependency_health import SLACK, DependencyHealth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_reads_that_answer_between_failed_posts_do_not_say_slack_is_back() -> None:
    clock = Clock()
    registry = DependencyHealth(clock=clock)
    health = SlackHealth(registry, quiet_s=5.0, clock=clock)
    for _ in range(5):
        health.failed("chat.postMessage", "chat.postMessage answered HTTP 503")
        clock.now += 1
        health.answered("conversations.replies")  # the thread read for the mark
        clock.now += 1
        assert registry.is_failing(SLACK)
    health.answered("chat.postMessage")  # a post answers, but 1 s after a failure
    assert registry.is_failing(SLACK)
    clock.now += 5
    health.answered("chat.stopStream")  # quiet for 5 s since the last failure
    assert not registry.is_failing(SLACK)


def test_a_slack_that_is_back_says_so_with_nothing_more_sent() -> None:
    registry = DependencyHealth()
    health = SlackHealth(registry, quiet_s=0.2)

    async def outage() -> None:
        health.failed("chat.update", "chat.update answered HTTP 502")
        health.answered("chat.update")  # at once: not quiet yet
        assert registry.is_failing(SLACK)
        await asyncio.sleep(0.4)  # no call at all: the health looks again by itself

    asyncio.run(outage())
    assert not registry.is_failing(SLACK)


def test_an_answer_before_the_last_failure_does_not_count() -> None:
    clock = Clock()
    registry = DependencyHealth(clock=clock)
    health = SlackHealth(registry, quiet_s=5.0, clock=clock)
    health.failed("chat.postMessage", "reset")
    health.answered("chat.postMessage")
    health.failed("chat.postMessage", "reset")
    clock.now += 10
    health.answered("conversations.replies")  # a read: posts have not answered since
    assert registry.is_failing(SLACK)
