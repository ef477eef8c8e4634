"""A message with a 30-page PDF and three screenshots, delivered to ``thoth serve`` (issue 50).

``thoth serve`` runs as a real child process (uvicorn, Bolt, the real SDKs) against the
loopback Slack, which holds the four files behind ``url_private_download`` with the
bearer check, and the loopback Messages API (instant replies). Each of ``--runs``
messages is a signed ``file_share`` delivery in a new thread carrying the four files'
objects, as Slack sends them. Printed:

- from the delivery sent to the turn's model request received (p50, max): the acks, the
  downloads, reading the PDF's 30 pages and scaling the screenshots, memory's context
  and the request's base64 together (target: p50 <= 1.5 s on a 2-core machine);
- the serve process's memory: its resident size after five ordinary messages (one of
  them long) were answered and kept, as in a process that has been up a while, and its
  largest while the runs are read, sampled every 10 ms (target: growth <= 100 MB); and
  its size after each message.

    python bench/files_delivery.py [--runs 10]
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from fpdf import FPDF  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402
from slack_sdk.signature import SignatureVerifier  # noqa: E402

from bench.slack_burst import SECRET, Replica, _environment  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402

CHANNEL = "C1"
# What the process answers before the files come: a day's ordinary messages.
WARM_MESSAGES = (
    "hello", "when is the billing deploy this week?",
    "notes from the planning meeting: " + " ".join(
        f"item {n}: the {topic} work moves to the {team} team after the review."
        for n, (topic, team) in enumerate(
            [("search", "platform"), ("ledger", "payments"), ("mailer", "growth")] * 12)),
    "thanks, that helps", "who owns the on-call rotation in December?",
)
SCOPES = ("chat:write,reactions:write,users:read,channels:history,groups:history,im:history,"
          "mpim:history,channels:read,groups:read,im:read,mpim:read,files:read")


def spec_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages of prose, as a spec is."""
    rng = random.Random(30)
    words = ("rollout", "service", "latency", "owner", "deadline", "migration", "budget",
             "review", "customer", "incident", "database", "replica", "cache", "region",
             "quota", "approval", "runbook")
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for page in range(1, pages + 1):
        pdf.add_page()
        pdf.cell(0, 8, f"Section {page}", new_x="LMARGIN", new_y="NEXT")
        for _ in range(40):
            pdf.cell(0, 5, " ".join(rng.choice(words) for _ in range(14)),
                     new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def screenshot(number: int) -> bytes:
    """A 2560x1440 PNG with text and panels, as a dashboard screenshot is."""
    rng = random.Random(number)
    image = Image.new("RGB", (2560, 1440), (245, 246, 248))
    draw = ImageDraw.Draw(image)
    for panel in range(12):
        x, y = (panel % 4) * 640 + 20, (panel // 4) * 480 + 20
        draw.rectangle((x, y, x + 600, y + 440), outline=(180, 180, 190), fill=(255, 255, 255))
        points = [(x + 20 + step * 14, y + 400 - rng.randrange(300)) for step in range(40)]
        draw.line(points, fill=(40, 90, 200), width=3)
        draw.text((x + 20, y + 16), f"p95 latency panel {panel} run {number}", fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Peak:
    """The largest resident size of a process, sampled every 10 ms while running."""

    def __init__(self, pid: int) -> None:
        self.pid, self.most, self._done = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.01):
            self.most = max(self.most, rss_mb(self.pid))

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return self.most


def deliver(address: str, event: dict[str, object], event_id: str) -> float:
    """Send one signed delivery; returns when it was sent (monotonic)."""
    body = json.dumps({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
        "event_time": int(time.time()), "event": event,
        "authorizations": [{"enterprise_id": None, "team_id": "T1", "user_id": "UBOT",
                            "is_bot": True, "is_enterprise_install": False}]})
    moment = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=moment, body=body) or ""
    parts = urlsplit(address)
    sent = time.monotonic()
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request("POST", parts.path, body=body.encode(), headers={
        "content-type": "application/json", "x-slack-request-timestamp": moment,
        "x-slack-signature": signature})
    status = connection.getresponse().status
    connection.close()
    if status != 200:
        raise SystemExit(f"the delivery was answered {status}")
    return sent


def wait_for(model: FakeAnthropic, count: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(model.requests) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"the model was asked {len(model.requests)} times, not {count}")
        time.sleep(0.005)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--screenshots", type=int, default=3)
    args = parser.parse_args()
    pdf, shots = spec_pdf(args.pages), [screenshot(n) for n in range(args.screenshots)]
    with tempfile.TemporaryDirectory() as scratch, FakeSlack(
            rate_limits=False, scopes=SCOPES) as slack, FakeAnthropic() as model:
        slack.add_channel(CHANNEL, "general")
        slack.add_user("U1", "dana")
        # Each run: the turn, then the screenshots' descriptions after it.
        model.push(*[api.text("Noted.") for _ in WARM_MESSAGES],
                   *[reply for _ in range(args.runs) for reply in (
            api.text("The spec and the dashboards are here."),
            api.text("\n".join(f"screen-{n}.png: a dashboard of latency panels"
                               for n in range(3))))])
        server = Replica(Path(scratch) / "home", _environment(slack.url, model.url, None))
        try:
            address = server.url()
            now = int(time.time())
            # A process that has been answering a while: ordinary messages, short and long,
            # each answered and kept, so what the files add is what is measured.
            for number, words in enumerate(WARM_MESSAGES):
                deliver(address, {"type": "message", "channel_type": "channel", "user": "U1",
                                  "text": f"<@UBOT> {words}", "ts": f"{now - 100 + number}.0",
                                  "channel": CHANNEL, "team": "T1"}, f"EvWarm{number}")
                wait_for(model, number + 1)
            time.sleep(2.0)
            settled = rss_mb(server.popen.pid)
            peak = Peak(server.popen.pid)
            waits: list[float] = []
            after_each: list[float] = []
            for run in range(args.runs):
                files = [slack.add_file(f"FP{run}", f"spec-{run}.pdf", pdf,
                                        mimetype="application/pdf")]
                files += [slack.add_file(f"FS{run}{n}", f"screen-{n}.png", shot,
                                         mimetype="image/png") for n, shot in enumerate(shots)]
                asked = len(model.requests)
                sent = deliver(address, {
                    "type": "message", "subtype": "file_share", "channel_type": "channel",
                    "user": "U1", "text": "<@UBOT> the spec and this morning's dashboards",
                    "ts": f"{now + run + 1}.000000", "channel": CHANNEL, "team": "T1",
                    "files": files}, f"EvFiles{run}")
                wait_for(model, asked + 1)
                waits.append(model.requests[asked].received_at - sent)
                if shots:
                    wait_for(model, asked + 2)  # the descriptions, before the next run
                else:
                    time.sleep(1.0)  # the episode stored, before the next run
                after_each.append(rss_mb(server.popen.pid))
            most = peak.stop()
        finally:
            server.stop()
    ordered = sorted(waits)
    print(f"{args.runs} messages, each a {args.pages}-page PDF ({len(pdf) / 1024:.0f} KB) and"
          f" {len(shots)} screenshots of 2560x1440 ({sum(map(len, shots)) / 1024:.0f} KB)")
    print(f"delivery -> model request: p50 {statistics.median(ordered):.3f} s,"
          f" max {ordered[-1]:.3f} s")
    print(f"serve RSS: {settled:.0f} MB settled, {most:.0f} MB at most while reading,"
          f" growth {most - settled:.0f} MB")
    print("serve RSS after each message (MB): "
          + " ".join(f"{size:.0f}" for size in after_each))


if __name__ == "__main__":
    main()
