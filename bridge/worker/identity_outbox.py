"""Sending the identity outbox's turns from a worker: claimed, sent, removed; a turn
the backend could not take is held and retried with backoff, a refused one dropped; one
of a person whose forget is still to be swept waits for the sweep."""

from __future__ import annotations

import asyncio
import logging

from layers.identity.ingest_queue import described, refused
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import IdentityBackend
from layers.identity.tombstones import SEND, Tombstones
from layers.shared.backoff import backoff_delay
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)

# Longer than sending one batch takes; a batch whose worker died is free after it.
BATCH_HOLD_S = 120.0
BATCH = 50
RETRY_BASE_S = 5.0
RETRY_MAX_S = 600.0


async def send_outbox(
    outbox: Offloaded[IngestOutbox], backend: IdentityBackend,
    tombstones: Offloaded[Tombstones] | None = None,
) -> int:
    """Send one batch of the turns no process holds; returns how many were settled."""
    claimed = await outbox.run(lambda box: box.claim(hold_s=BATCH_HOLD_S, limit=BATCH))
    settled = 0
    for entry_id, turn in claimed:
        fate = SEND if tombstones is None else await tombstones.run(Tombstones.fate, turn)
        if fate.wait_until is not None:
            await outbox.run(IngestOutbox.hold, entry_id, fate.wait_until)
            continue  # its person's forget is still to be swept
        try:
            if not fate.dropped:
                await backend.ingest(turn)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not refused(error):
                delay = await outbox.run(IngestOutbox.retry_later, entry_id, _delay)
                log.info("identity ingest failed (%s); retry in %.0fs", described(error), delay)
                continue
            log.error("the identity backend refused a turn of session %s: %s",
                      turn.session_id, described(error))
        await outbox.run(IngestOutbox.remove, entry_id)
        settled += 1
    return settled


def _delay(failures: int) -> float:
    return backoff_delay(failures, base_s=RETRY_BASE_S, max_s=RETRY_MAX_S)

