"""Waiting on a condition with a timeout (never a bare sleep for a result)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    """Poll ``check`` until it returns something truthy; that value, or AssertionError."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")
