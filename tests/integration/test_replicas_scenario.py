"""Three `thoth serve` replicas and two `thoth worker`s, real processes on one real
PostgreSQL, behind a "load balancer" (this test) that sends each Slack delivery to one
replica and its retry to another; then a replica and a worker are killed with SIGKILL
mid-burst. Slack is the loopback Web API; the model is the offline one (instant)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import git

from bridge.all_tables import ALL_SCHEMAS
from bridge.slack_api.skill_cards import CardStore
from layers.procedural.brain import Brain
from layers.procedural.drafts import SkillDrafts
from layers.procedural.skills import SkillLibrary
from layers.shared.storage.engines import connect_postgres
from tests.integration.replicas_harness import (
    LoadBalancer,
    cluster,
    deliver,
    mention,
    turns,
)
from tests.postgres import PostgresForTests, count
from tests.servers.slack_api import FakeSlack
from tests.waiting import wait_until

CHANNELS = ("C1", "C2", "C3")
THREADS = 9
MESSAGES_PER_THREAD = 3
BODY = (
    "# Rollback\n\n1. Page the on-call and say in #deploys that a rollback has begun.\n"
    "2. Run make rollback and watch the error rate and the dashboards until they settle.\n"
)


def test_three_replicas_and_two_workers_answer_once_in_order_through_sigkill(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    url = postgres.fresh_database()
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        for channel in CHANNELS:
            slack.add_channel(channel, f"team-{channel.lower()}")
        with cluster(tmp_path, url, slack) as (replicas, workers):
            balancer = LoadBalancer([r.first_line().strip().split()[-1] for r in replicas])
            assert all(a.startswith("http://127.0.0.1:") for a in balancer.addresses)
            for worker in workers:
                assert "Thoth worker on postgresql://" in worker.first_line()
            threads = [(CHANNELS[n % 3], f"1700100{n:03d}.000100") for n in range(THREADS)]
            sent: dict[str, list[str]] = {root: [] for _, root in threads}
            for round_number in range(MESSAGES_PER_THREAD):
                if round_number == 1:
                    # Mid-burst: a replica and a worker die without a word.
                    replicas[0].popen.send_signal(signal.SIGKILL)
                    workers[0].popen.send_signal(signal.SIGKILL)
                    replicas[0].popen.wait(10)
                    balancer.alive[0] = False
                for number, (channel, root) in enumerate(threads):
                    ts = root if round_number == 0 else f"{root[:-3]}{round_number + 1:03d}"
                    text = f"note {number}-{round_number}"
                    sent[root].append(text)
                    balancer.send(mention(f"Ev{number}x{round_number}", channel, text, ts, root),
                                  first=number + round_number)
            try:
                wait_until(lambda: all(len(turns(url, root)) >= MESSAGES_PER_THREAD
                                       for _, root in threads), 90)
            except AssertionError:
                logs = "\n".join("".join(r.errors)[-3000:] for r in replicas)
                raise AssertionError(f"turns: { {r: turns(url, r) for _, r in threads} }\n"
                                     f"replicas said:\n{logs}") from None
            for channel, root in threads:
                # Each message once, in the order it was sent, whichever replica took it,
                # and one reply each (a reply the killed replica had begun was replaced).
                assert turns(url, root) == sent[root]
                replies = [m for m in slack.messages(channel, root) if m.get("user") == "UBOT"]
                assert len(replies) == MESSAGES_PER_THREAD, [m.get("text") for m in replies]

            # Every thread ended: each reflection runs once, on the worker left.
            for number, (channel, root) in enumerate(threads):
                balancer.send(mention(f"EvDone{number}", channel, "done", f"{root[:-3]}900",
                                      root), first=number)
            done = "SELECT count(*) FROM reflections WHERE state = 'done'"
            wait_until(lambda: count(url, done) == THREADS, 120)
            assert count(url, "SELECT max(attempts) FROM reflections") == 1
            assert count(url, "SELECT count(*) FROM slack_inbox") == 0
            assert count(url, "SELECT count(*) FROM sessions") == THREADS


def reaction(event_id: str, user: str, name: str, channel: str, ts: str) -> dict[str, Any]:
    event = {"type": "reaction_added", "user": user, "reaction": name, "item_user": "UBOT",
             "item": {"type": "message", "channel": channel, "ts": ts}, "event_ts": ts}
    return {"token": "t", "team_id": "T1", "api_app_id": "A1", "event": event,
            "type": "event_callback", "event_id": event_id, "event_time": int(time.time())}


def test_a_skill_approved_on_one_replica_is_one_commit_and_every_process_uses_it(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    url, remote = postgres.fresh_database(), tmp_path / "brain.git"
    git.Repo.init(remote, bare=True, initial_branch="main")
    with FakeSlack() as slack:
        for user, name in (("U1", "dana"), ("U2", "lee")):
            slack.add_user(user, name)
        slack.add_channel("C1", "general")
        with cluster(tmp_path, url, slack, BRAIN_REMOTE=str(remote),
                     FOUNDER_USER_IDS="U1,U2") as (replicas, workers):
            addresses = [r.first_line().strip().split()[-1] for r in replicas]
            for worker in workers:
                worker.first_line()
            homes = [tmp_path / f"replica{n}" for n in range(3)]
            homes += [tmp_path / f"worker{n}" for n in range(2)]
            # One history: `thoth init` made the brain, every process cloned it.
            assert len(list(git.Repo(remote).iter_commits("main"))) == 1
            roots = {git.Repo(home / "brain").head.commit.hexsha for home in homes}
            assert roots == {git.Repo(remote).commit("main").hexsha}

            db = connect_postgres(url, schemas=ALL_SCHEMAS)
            library = SkillLibrary((tmp_path / "unused",))
            draft = SkillDrafts(db, Brain(tmp_path / "unused"), library).propose(
                "rollback", "How we roll back a deploy", BODY
            )
            card = slack.add_message("C1", "a skill draft: rollback", user="UBOT")
            CardStore(db).record(draft.id, channel="C1", ts=card, thread_ts=None)
            db.close()
            # Two founders approve at once, on two replicas.
            approvals = [
                threading.Thread(target=deliver, args=(
                    addresses[n], reaction(f"EvApprove{n}", user, "white_check_mark", "C1", card)
                ))
                for n, user in enumerate(("U1", "U2"))
            ]
            for approval in approvals:
                approval.start()
            for approval in approvals:
                approval.join(timeout=30)
            state = "SELECT count(*) FROM skill_drafts WHERE state = 'accepted'"
            wait_until(lambda: count(url, state) == 1, 60)
            wait_until(lambda: len(list(git.Repo(remote).iter_commits("main"))) == 2, 60)
            # Every replica and worker has it within seconds (its follower, every 2 s).
            wait_until(lambda: all((home / "brain" / "skills" / "rollback" / "SKILL.md").is_file()
                                   for home in homes), 20)
            assert len(list(git.Repo(remote).iter_commits("main"))) == 2  # committed once
