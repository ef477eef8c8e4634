"""The turn pipeline's own overhead, with 100k stored episodes and an instant model.

Everything a turn does except the model call and remote identity: session and
transcript reads, persona, the message's embedding and recall over every stored
episode (first turn of a session), prompt assembly, the cost-cap check, streaming
to the sink, and the transcript write. The model is an in-process stand-in that
streams a fixed reply at once; its own time is subtracted. Printed, p50 / p95:

- overhead to the reply shown, first turns of a session (with recall) and follow-ups;
- model's last token -> reply shown;
- after the reply: transcript write (before the session's next turn may start) and
  the episode write (in the background, off the reply's path).

    python bench/turn_overhead.py [--episodes 100000] [--turns 200] [--workdir DIR]

The store is built as ``bench/recall_speed.py`` builds it (and shared with it
through ``--workdir``), then copied, so the pipeline's writes never touch it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from recall_speed import TEAM, load_locomo, percentile, sqlite_store  # noqa: E402

from bridge.app import build  # noqa: E402
from bridge.model.pricing import Usage  # noqa: E402
from bridge.model.protocol import ModelRequest, ModelResult, OnText  # noqa: E402
from bridge.pipeline.pipeline import TurnOutcome  # noqa: E402
from bridge.pipeline.reply_sink import CollectedReply  # noqa: E402
from bridge.pipeline.turn import Turn  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from layers.shared.embedding.embedder import MiniLMEmbedder  # noqa: E402
from layers.shared.places import Place  # noqa: E402

REPLY = (
    "We moved the deploy to Thursday after the incident review. ",
    "Rollbacks go through the release channel, ",
    "and the on-call engineer signs off. ",
    "The runbook has the exact steps.",
)


class InstantModel:
    """Streams a fixed reply with no delay: what is left is the pipeline's own time."""

    name = "claude-sonnet-4-6"
    memory_only = False

    async def respond(self, request: ModelRequest, on_text: OnText) -> ModelResult:
        for piece in REPLY:
            await on_text(piece)
        text = "".join(REPLY)
        return ModelResult(
            text=text,
            usage=Usage(input_tokens=1800, output_tokens=40),
            model=self.name,
        )

    async def aclose(self) -> None:
        return None


async def run_turns(home: Path, turns: int) -> tuple[list[TurnOutcome], list[float]]:
    settings = Settings(_env_file=None, thoth_home=home)  # type: ignore[call-arg]
    embedder = MiniLMEmbedder()
    app = build(settings, embedder=embedder, model=InstantModel())
    _, questions = load_locomo()
    asked = random.Random(5).sample(questions, turns + 10)
    outcomes: list[TurnOutcome] = []
    episode_writes: list[float] = []
    for number, question in enumerate(asked):
        place = Place(TEAM, f"C{number % 50}", "public", f"{number // 2}.000")
        # Two turns per session: the first recalls related episodes, the second does not.
        turn = Turn(f"bench:{number // 2}", question, place, user=f"U{number % 200}")
        outcome = await app.pipeline.handle(turn, CollectedReply())
        started = time.monotonic()
        await app.pipeline.drain(30)
        if number >= 10:  # the first ten warm up the model, the index and SQLite
            outcomes.append(outcome)
            episode_writes.append((time.monotonic() - started) * 1000)
    await app.aclose()
    return outcomes, episode_writes


def line(label: str, values: list[float]) -> str:
    return (
        f"{label:<44} {statistics.median(values):>8.2f} {percentile(values, 0.95):>8.2f}"
        f" {len(values):>6}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--workdir", type=Path, help="keep the built store here (reused)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "stores"
        workdir.mkdir(parents=True, exist_ok=True)
        source = sqlite_store(workdir, args.episodes)
        home = Path(scratch) / "home"
        home.mkdir()
        shutil.copy(source, home / "thoth.db")
        outcomes, episode_writes = asyncio.run(run_turns(home, args.turns))

    def overhead(o: TurnOutcome) -> float:
        return (o.timings.shown - o.timings.started - o.timings.model_seconds) * 1000

    first = [overhead(o) for o in outcomes if o.first_turn]
    later = [overhead(o) for o in outcomes if not o.first_turn]
    print(f"Turn pipeline overhead, {args.episodes:,} stored episodes, instant model (ms)\n")
    print(f"{'':<44} {'p50':>8} {'p95':>8} {'turns':>6}")
    print(line("overhead to reply shown, all turns", first + later))
    print(line("  first turn of a session (embed + recall)", first))
    print(line("  follow-up turn", later))
    print(line("last token -> reply shown", [
        (o.timings.shown - o.timings.last_token) * 1000 for o in outcomes
    ]))
    print(line("after reply: transcript write", [
        (o.timings.recorded - o.timings.shown) * 1000 for o in outcomes
    ]))
    print(line("after reply: episode write (background)", episode_writes))
    print("\ntarget: overhead p95 <= 50 ms including the message's embedding")


if __name__ == "__main__":
    main()
