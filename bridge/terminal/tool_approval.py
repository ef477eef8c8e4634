"""`thoth chat` asks before a team's tool that may change something runs: a y/N line.

The question is printed, and the next line typed answers it: y (or yes) allows this
call, a (or always) allows this tool from now on, anything else — an empty line, the end
of input — denies it. The chat's own lines are read while the turn waits (the chat reads
nothing else then), so a piped chat answers with its next line too.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import TextIO

from bridge.pipeline.tools.approvals import AskedCall, Decision
from bridge.pipeline.turn import Turn
from layers.shared.redaction import redact

ARGUMENTS_SHOWN = 500
YES = frozenset({"y", "yes"})
ALWAYS = frozenset({"a", "always"})


class TerminalApprovals:
    def __init__(self, lines: Iterator[str], out: TextIO) -> None:
        self._lines = lines
        self._out = out
        self._reading = threading.Lock()

    async def ask(self, call: AskedCall, turn: Turn) -> Decision:
        shown = redact(json.dumps(call.arguments, ensure_ascii=False, sort_keys=True))
        if len(shown) > ARGUMENTS_SHOWN:
            shown = shown[:ARGUMENTS_SHOWN] + "…"
        print(f"\nAllow {call.name} {shown}? y = once, a = always, N = no: ", end="",
              file=self._out, flush=True)
        answer = (await asyncio.to_thread(self._next_line) or "").strip().lower()
        if answer in YES or answer in ALWAYS:
            return Decision(True, how=f"allowed in the terminal by {turn.user or 'someone'}"
                            + (", always" if answer in ALWAYS else ""),
                            always=answer in ALWAYS)
        return Decision(False, f"{turn.user_name or 'The person'} did not allow {call.name}:"
                               " it did not run. Ask what they would like instead.",
                        "denied in the terminal")

    def _next_line(self) -> str | None:
        with self._reading:
            return next(self._lines, None)
