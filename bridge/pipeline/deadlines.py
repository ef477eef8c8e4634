"""Run a context source under its own deadline; a slow or failing one is left out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


async def within_deadline(name: str, seconds: float, work: Awaitable[T]) -> T | None:
    """``work``'s result, or None (logged) if it fails or takes longer than ``seconds``.

    A source that runs in a worker thread keeps running after its deadline; its
    result is simply not waited for, so the turn is never held up by it.
    """
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        log.warning("context source %s missed its %.2fs deadline; left out", name, seconds)
    except Exception:
        log.exception("context source %s failed; left out", name)
    return None
