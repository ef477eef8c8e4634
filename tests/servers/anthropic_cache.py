"""Anthropic's prompt cache as its reference describes it, for the loopback Messages API.

The prompt is read in order — tools, then system, then messages — and a block with
``cache_control`` marks a breakpoint: the prefix up to it is written to the cache if it
holds at least the model's minimum of tokens (shorter prefixes are silently not cached),
and a later request whose prefix up to one of its breakpoints is the same reads it.
Tokens are estimated at four characters each: the point is which prefixes are cached.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from bridge.model.catalogue import CATALOGUE

# "The system checks for cache hits at each breakpoint and up to 20 blocks before it."
LOOKBACK = 20


def minimum_for(model: str) -> int:
    """The model's documented minimum cacheable prompt length (its row of models.json)."""
    return CATALOGUE.capabilities(model).min_cache_tokens


class PromptCache:
    def __init__(self) -> None:
        self._cached: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(uncached input, cache read, cache write) tokens for this request."""
        blocks = _blocks(body)
        total = _tokens(blocks)
        minimum = minimum_for(str(body.get("model", "")))
        marks = [i for i, block in enumerate(blocks)
                 if isinstance(block, dict) and block.get("cache_control")]
        cacheable = [(_tokens(blocks[: i + 1]), _key(blocks[: i + 1])) for i in marks]
        cacheable = [(tokens, key) for tokens, key in cacheable if tokens >= minimum]
        with self._lock:
            # A hit is looked for at each breakpoint and up to 20 blocks before it.
            read = max(
                (_tokens(blocks[: j + 1]) for i in marks for j in range(max(0, i - LOOKBACK), i + 1)
                 if _key(blocks[: j + 1]) in self._cached),
                default=0,
            )
            longest = max((tokens for tokens, _ in cacheable), default=0)
            write = max(0, longest - read)
            self._cached.update(key for _, key in cacheable)
        return total - read - write, read, write


def _blocks(body: dict[str, Any]) -> list[Any]:
    blocks: list[Any] = list(body.get("tools") or [])
    system = body.get("system")
    blocks.extend([{"type": "text", "text": system}] if isinstance(system, str) else system or [])
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks.extend([{"type": "text", "text": content}] if isinstance(content, str)
                      else content or [])
    return blocks


def _tokens(blocks: list[Any]) -> int:
    return len(json.dumps(_without_markers(blocks))) // 4


def _key(blocks: list[Any]) -> str:
    return hashlib.sha256(json.dumps(_without_markers(blocks)).encode()).hexdigest()


def _without_markers(blocks: list[Any]) -> list[Any]:
    # Where the breakpoints sit does not change the cached text.
    return [
        {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict)
        else block
        for block in blocks
    ]
