"""`thoth serve` replicas and `thoth worker`s as real processes on one real PostgreSQL,
behind a "load balancer" (``LoadBalancer``) that sends each Slack delivery to one replica
and its retry to another. Slack is the loopback Web API; the model is the offline one
(instant) unless the settings name another."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from slack_sdk.signature import SignatureVerifier

from tests.servers.slack_api import FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
LEASE_S = 3


class Process:
    """A `thoth` command running on its own, its output read as it comes."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bridge", *args], cwd=cwd, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line)

    def _read_errors(self) -> None:
        assert self.popen.stderr is not None
        self.errors.extend(self.popen.stderr)

    def first_line(self, timeout_s: float = 120) -> str:
        try:
            return self.lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no output; stderr: {''.join(self.errors)[-2000:]}") from None


@contextmanager
def cluster(
    tmp_path: Path, url: str, slack: FakeSlack, *, replicas: int = 3, workers: int = 2,
    lease_s: float = LEASE_S, **settings: str,
) -> Iterator[tuple[list[Process], list[Process]]]:
    def env(name: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
        return {**base, **settings, "THOTH_HOME": str(tmp_path / name), "DATABASE_URL": url,
                "BACKGROUND_WORK": "workers", "INBOX_LEASE_S": str(lease_s),
                "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.url, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    # Migrations first, once: then every process finds the schema made.
    made = subprocess.run([sys.executable, "-m", "bridge", "init"], cwd=tmp_path,
                          env=env("init"), capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    serving = [Process(["serve", "--host", "127.0.0.1", "--port", "0"], env(f"replica{n}"),
                       tmp_path) for n in range(replicas)]
    working = [Process(["-v", "worker"], env(f"worker{n}"), tmp_path) for n in range(workers)]
    try:
        yield serving, working
    finally:
        for process in [*serving, *working]:
            if process.popen.poll() is None:
                process.popen.send_signal(signal.SIGTERM)
        for process in [*serving, *working]:
            try:
                process.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.popen.kill()


def deliver(url: str, body: dict[str, Any], *, retry: int = 0) -> int:
    """One signed Events API request; 0 when the replica cannot be reached."""
    data = json.dumps(body)
    moment = str(int(time.time()))
    headers = {"content-type": "application/json", "x-slack-request-timestamp": moment,
               "x-slack-signature": SignatureVerifier(SECRET).generate_signature(
                   timestamp=moment, body=data)}
    if retry:
        headers |= {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"}
    request = urllib.request.Request(url, data=data.encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def mention(event_id: str, channel: str, text: str, ts: str, thread_ts: str) -> dict[str, Any]:
    event = {"type": "app_mention", "user": "U1", "text": f"<@UBOT> {text}", "ts": ts,
             "team": "T1", "channel": channel, "event_ts": ts}
    if thread_ts != ts:
        event["thread_ts"] = thread_ts
    return {"token": "t", "team_id": "T1", "api_app_id": "A1", "event": event,
            "type": "event_callback", "event_id": event_id, "event_time": int(time.time())}


class LoadBalancer:
    """Sends each delivery to one replica and Slack's retry of it to the next; a replica
    that cannot be reached is skipped, as Slack's retry would land elsewhere."""

    def __init__(self, addresses: list[str]) -> None:
        self.addresses = addresses
        self.alive = [True] * len(addresses)

    def send(self, body: dict[str, Any], first: int) -> None:
        acked = False
        for attempt in range(len(self.addresses)):
            target = (first + attempt) % len(self.addresses)
            if not self.alive[target]:
                continue
            status = deliver(self.addresses[target], body, retry=attempt)
            assert status in (0, 200), status
            acked = acked or status == 200
            if acked and attempt >= 1:
                return
        assert acked


def turns(url: str, root: str) -> list[str]:
    """What was said in the thread at ``root``, in the order the turns were recorded."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT t.user_text FROM transcript_turns t JOIN sessions s ON s.id = t.session_id"
            " WHERE s.key LIKE %s ORDER BY t.seq",
            (f"%:{root}",),
        ).fetchall()
    return [row[0] for row in rows]
