"""A turn the database has no room to keep (a full disk, ``StorageFull``): the person is
told so, once, and the turn is not answered.

Decided (issue 55): not answered rather than answered and forgotten. An answer the
transcript cannot keep would be missing from the conversation's next turn, the model's
spend could not be charged against the cap (``MeteredModel`` writes its reservation
first), and a person who sends the message again once there is room would be answered
twice. So the turn stops before the model, and says why.

Said once: what was said cannot be written down either, so it is remembered in memory,
per delivery (``Turn.event_id``): a delivery that comes round again (its inbox row could
not be marked done while the disk was full, so it is taken over when its lease ends) is
neither told a second time nor answered after it was told it would not be.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from bridge import messages
from bridge.pipeline.reply_sink import ReplySink
from layers.shared.errors import StorageFull

log = logging.getLogger(__name__)

# Deliveries remembered as told: far more than a full disk's hour of messages; the oldest
# are forgotten first (a delivery comes round again within a lease, seconds).
TOLD_KEPT = 10_000


class ToldOnce:
    """The deliveries already told they could not be kept, in this process's memory."""

    def __init__(self, kept: int = TOLD_KEPT) -> None:
        self._told: OrderedDict[str, None] = OrderedDict()
        self._kept = kept
        self._lock = threading.Lock()

    def first_time(self, key: str | None) -> bool:
        """True once per ``key`` (and always for None: a turn no delivery stands behind,
        as the terminal's)."""
        if key is None:
            return True
        with self._lock:
            if key in self._told:
                return False
            self._told[key] = None
            if len(self._told) > self._kept:
                self._told.popitem(last=False)
            return True

    def told(self, key: str | None) -> bool:
        if key is None:
            return False
        with self._lock:
            return key in self._told


async def say_cannot_keep(sink: ReplySink, where: str) -> None:
    """Tell the person, through ``sink`` and without the database, that their turn cannot
    be kept. A sink that records what it posted (Slack keeps each reply's ts) finds no
    room either: the message was posted all the same, and that is what counts here."""
    try:
        await sink.finish(messages.DISK_FULL, ok=False)
    except StorageFull:
        log.info("the disk-full notice in %s was posted, not recorded", where)
