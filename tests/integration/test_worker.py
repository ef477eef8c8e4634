"""`thoth worker` as real processes on a real PostgreSQL: `thoth chat` with
BACKGROUND_WORK=workers only queues; workers claim, run and empty the queues."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.postgres import PostgresForTests, count
from tests.waiting import wait_until


def _env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), DATABASE_URL=url, BACKGROUND_WORK="workers",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def test_two_workers_share_the_queues_and_each_item_is_done_once(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    home, url = tmp_path / "home", postgres.fresh_database()
    for number in range(4):  # four sessions, each ended with /done
        chat = subprocess.run(
            [sys.executable, "-m", "bridge", "chat"], cwd=tmp_path, env=_env(home, url),
            input=f"I prefer answers about topic {number} kept short\n/done\n",
            capture_output=True, text=True, timeout=180,
        )
        assert chat.returncode == 0, chat.stderr
    # Queued, not run: no worker has claimed anything yet.
    assert count(url, "SELECT count(*) FROM reflections WHERE state = 'pending'") == 4
    assert count(url, "SELECT count(*) FROM identity_outbox") == 4
    assert count(url, "SELECT count(*) FROM identity_observations") == 0

    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "bridge", "-v", "worker"], cwd=tmp_path,
            env=_env(home, url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(2)
    ]
    try:
        wait_until(
            lambda: count(url, "SELECT count(*) FROM reflections WHERE state = 'done'") == 4,
            120,
        )
        wait_until(lambda: count(url, "SELECT count(*) FROM identity_outbox") == 0, 60)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        outputs = [worker.communicate(timeout=60) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    assert all("Thoth worker on postgresql://" in out for out, _ in outputs)
    # Each reflection ran once, whichever worker claimed it.
    assert count(url, "SELECT max(attempts) FROM reflections") == 1
    runs = sum(err.count("reflecting on session") for _, err in outputs)
    assert runs == 4, outputs
    assert count(url, "SELECT count(*) FROM identity_observations") >= 4
