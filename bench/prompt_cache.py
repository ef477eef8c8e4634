"""What prompt caching saves over one conversation, read from the API's usage fields.

A session of ``--turns`` turns goes through the real turn pipeline and the real
``anthropic`` SDK to the loopback Messages API, which accounts its prompt cache as
Anthropic's reference describes it (``tests/servers/anthropic_cache.py``: a prefix is
cached at a breakpoint when it holds the model's minimum of tokens, and read back from
up to 20 blocks before a later breakpoint). Printed per turn: uncached input, cache
reads and cache writes (tokens, as the usage fields report them), and the session's
cost with the cache and as it would be without it, at the model's list price, and the
share of all input tokens read from the cache over the whole thread (issue 27's target:
70% over a 200-turn thread on the default model). ``--every N`` prints every Nth turn.

    python bench/prompt_cache.py [--turns 200] [--model claude-opus-5-5] [--every 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bridge.app import build  # noqa: E402
from bridge.model.catalogue import DEFAULT_PRICES  # noqa: E402
from bridge.model.pricing import Usage, price_of  # noqa: E402
from bridge.pipeline.turn import Turn  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from layers.shared.places import Place  # noqa: E402
from tests.fakes import HashingEmbedder, RecordingSink  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402

ANSWER = (
    "Here is how the release goes: freeze the branch on Tuesday, run the migration "
    "rehearsal on staging, get sign-off from the on-call engineer, then deploy in two "
    "waves with the feature flags dark. "
) * 6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--model", default="claude-opus-5-5")
    parser.add_argument("--every", type=int, default=10, help="print every Nth turn")
    args = parser.parse_args()
    with FakeAnthropic() as server, tempfile.TemporaryDirectory() as home:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, thoth_home=Path(home), anthropic_api_key="sk-ant-bench",
            anthropic_base_url=server.url, thoth_model=args.model,
            # The whole thread is measured: the cap would stop it part way (about turn 140).
            daily_cost_cap_usd=1_000_000,
        )
        server.push(*[api.text(ANSWER) for _ in range(args.turns)])
        app = build(settings, embedder=HashingEmbedder())
        place = Place("T1", "C1", "public", "1.1", "general")

        async def run() -> None:
            for number in range(args.turns):
                text = f"question {number} about the release process"
                await app.pipeline.handle(Turn("bench", text, place, user="U1"), RecordingSink())
            await app.drain()

        asyncio.run(run())
        with app.db.read() as conn:
            rows = conn.execute(
                "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd FROM model_usage WHERE purpose = 'turn' ORDER BY rowid"
            ).fetchall()
        app.close()
    price = price_of(args.model, DEFAULT_PRICES)
    print(f"model {args.model}; turn: uncached input / cache read / cache write (tokens)")
    with_cache = without_cache = 0.0
    for number, (uncached, output, read, write, cost) in enumerate(rows, start=1):
        if number % args.every == 0 or number == 1:
            print(f"  {number:3d}: {uncached:6d} / {read:6d} / {write:6d}")
        with_cache += float(cost)
        without_cache += price.cost(Usage(int(uncached) + int(read) + int(write), int(output)))
    reads = sum(int(row[2]) for row in rows)
    prompt = sum(int(row[0]) + int(row[2]) + int(row[3]) for row in rows)
    late = [row for number, row in enumerate(rows, start=1) if number > 21]
    late_share = sum(int(r[2]) for r in late) / max(1, sum(int(r[0]) + int(r[2]) + int(r[3])
                                                          for r in late))
    print(f"cache reads: {reads} of {prompt} input tokens over {len(rows)} turns"
          f" ({100 * reads / max(1, prompt):.1f}%; after turn 21: {100 * late_share:.1f}%)")
    print(f"session cost: ${with_cache:.4f} with the cache, ${without_cache:.4f} without"
          f" ({100 * (1 - with_cache / without_cache):.0f}% saved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
