"""A burst of Slack deliveries at ``thoth serve`` in HTTP mode, as Slack sends them.

``thoth serve`` runs as a real child process (uvicorn, Bolt, the real SDKs) against
the loopback Slack Web API (with Slack's rate tiers) and a loopback Messages API
whose every reply takes ``--model-seconds``. For each of ``--threads`` threads, four
signed deliveries go out at once, each on its own connection: the ``app_mention``,
the ``message`` event of the same message, and a retry of each
(``X-Slack-Retry-Num: 1``). Printed: ack latency p50 / p99 / max, connection errors,
non-200 answers, replies per thread and model calls (each thread answered once).

    python bench/slack_burst.py [--threads 20] [--model-seconds 2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from slack_sdk.signature import SignatureVerifier  # noqa: E402

from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

SECRET = "bench-signing-secret"
CHANNEL = "C1"
START_TIMEOUT_S = 120.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--model-seconds", type=float, default=2.0)
    args = parser.parse_args()
    with FakeSlack() as slack, FakeAnthropic() as model, tempfile.TemporaryDirectory() as home:
        slack.add_channel(CHANNEL, "general")
        slack.add_user("U1", "dana")
        model.push(*[api.text("A considered answer.", delay_s=args.model_seconds)
                     for _ in range(args.threads)])
        server = _start_serve(Path(home), slack.url, model.url)
        try:
            url = _listening_url(server)
            latencies, failures, statuses = _burst(url, args.threads)
            replies = _wait_for_replies(slack, args.threads, timeout_s=60 + args.model_seconds)
        finally:
            server.send_signal(signal.SIGTERM)
            exit_code = server.wait(timeout=60)
        ordered = sorted(latencies)
        print(f"deliveries: {len(latencies) + failures} ({args.threads} threads x 4)")
        print(f"ack latency ms: p50 {statistics.median(ordered) * 1000:.1f}"
              f"  p99 {_percentile(ordered, 99) * 1000:.1f}  max {ordered[-1] * 1000:.1f}")
        print(f"connection errors: {failures}; answers other than 200: "
              f"{sum(1 for status in statuses if status != 200)}")
        print(f"replies per thread: {sorted(set(replies))} (each thread must have exactly 1)")
        print(f"model calls: {len(model.requests)}; serve exit code: {exit_code}")
        ok = failures == 0 and set(replies) == {1} and len(model.requests) == args.threads
        return 0 if ok and exit_code == 0 else 1


def _start_serve(home: Path, slack_url: str, model_url: str) -> subprocess.Popen[str]:
    environment = {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_", "THOTH_"))},
        "THOTH_HOME": str(home),
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack_url,
        "ANTHROPIC_API_KEY": "sk-ant-bench",
        "ANTHROPIC_BASE_URL": model_url,
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bridge", "serve", "--host", "127.0.0.1", "--port", "0"],
        cwd=home, env=environment, stdout=subprocess.PIPE, text=True,
    )


def _listening_url(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    found: list[str] = []

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            if "listens on" in line:
                found.append(line.split("listens on", 1)[1].strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    if not found:
        raise SystemExit(f"thoth serve did not start (exit code {server.poll()})")
    return found[0]


def _deliveries(threads: int) -> list[tuple[str, dict[str, str]]]:
    bodies: list[tuple[str, dict[str, str]]] = []
    now = int(time.time())
    for number in range(threads):
        ts = f"{now}.{number:06d}"
        text = f"<@UBOT> question {number}"
        mention = {"type": "app_mention", "user": "U1", "text": text, "ts": ts,
                   "channel": CHANNEL, "team": "T1", "event_ts": ts}
        message = {**mention, "type": "message", "channel_type": "channel"}
        for kind, event in (("M", mention), ("S", message)):
            body = json.dumps({"type": "event_callback", "team_id": "T1", "api_app_id": "A1",
                               "event_id": f"Ev{kind}{number:04d}", "event_time": now,
                               "event": event})
            bodies.append((body, {}))
            bodies.append((body, {"x-slack-retry-num": "1",
                                  "x-slack-retry-reason": "http_timeout"}))
    return bodies


def _burst(url: str, threads: int) -> tuple[list[float], int, list[int]]:
    parts = urlsplit(url)
    verifier = SignatureVerifier(SECRET)
    start = threading.Barrier(threads * 4)

    def deliver(body: str, extra: dict[str, str]) -> tuple[float | None, int]:
        moment = str(int(time.time()))
        headers = {"content-type": "application/json", "x-slack-request-timestamp": moment,
                   "x-slack-signature": verifier.generate_signature(timestamp=moment, body=body),
                   **extra}
        start.wait()
        began = time.monotonic()
        try:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
            connection.request("POST", parts.path, body=body.encode(), headers=headers)
            status = connection.getresponse().status
            connection.close()
        except OSError:
            return None, 0
        return time.monotonic() - began, status

    with ThreadPoolExecutor(max_workers=threads * 4) as pool:
        results = list(pool.map(lambda item: deliver(*item), _deliveries(threads)))
    latencies = [latency for latency, _ in results if latency is not None]
    return latencies, len(results) - len(latencies), [status for _, status in results]


def _wait_for_replies(slack: FakeSlack, threads: int, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while True:
        counts = _reply_counts(slack)
        if (len(counts) == threads and min(counts) >= 1) or time.monotonic() > deadline:
            time.sleep(1.0)  # room for a wrong second answer to show up
            return _reply_counts(slack) + [0] * (threads - len(counts))
        time.sleep(0.2)


def _reply_counts(slack: FakeSlack) -> list[int]:
    per_thread: dict[str, int] = {}
    for message in slack.messages(CHANNEL):
        if message.get("user") == "UBOT" and message.get("thread_ts"):
            per_thread[message["thread_ts"]] = per_thread.get(message["thread_ts"], 0) + 1
    return list(per_thread.values())


def _percentile(ordered: list[float], percent: float) -> float:
    index = min(len(ordered) - 1, max(0, round(percent / 100 * len(ordered)) - 1))
    return ordered[index]


if __name__ == "__main__":
    raise SystemExit(main())
