"""Sending the identity outbox's turns from a worker: claimed, sent, removed; a turn
the backend could not take is held and retried with backoff, a refused one dropped; one
of a person whose forget is still to be swept waits for the sweep.

Order: a batch stops at the first turn that could not be sent and frees the rest, so no
later turn overtakes it (the claim itself keeps each person's turns behind their earlier
held one, ``outbox.py``). While the backend is away (``availability.py``) nothing is
claimed: each round probes it when the probe is due, and the next round after one
answers sends, so the outbox drains within seconds of the service's return. A turn that
failed because the service was away is counted (its next send checks the backend does
not hold it already: the write may have landed before the answer was lost) but not
delayed.
"""

from __future__ import annotations

import asyncio
import logging

from layers.identity.availability import availability_of
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
    tombstones: Offloaded[Tombstones] | None = None, *, retry_base_s: float = RETRY_BASE_S,
) -> int:
    """Send one batch of the turns no process holds; returns how many were settled.
    ``retry_base_s``: the first backoff of a turn that failed while the backend answered."""
    availability = availability_of(backend)
    if availability is not None and not await availability.probe_when_due():
        return 0  # away: nothing is claimed until a probe answers
    claimed = await outbox.run(lambda box: box.claim(hold_s=BATCH_HOLD_S, limit=BATCH))
    settled = 0
    for index, (entry_id, turn) in enumerate(claimed):
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
                away = availability is not None and not await availability.probe()
                await _failed(outbox, entry_id, error, away=away, base_s=retry_base_s)
                rest = [later_id for later_id, _ in claimed[index + 1:]]
                await outbox.run(IngestOutbox.release_all, rest)
                break
            log.error("the identity backend refused a turn of session %s: %s",
                      turn.session_id, described(error))
        await outbox.run(IngestOutbox.remove, entry_id)
        settled += 1
    return settled


async def _failed(
    outbox: Offloaded[IngestOutbox], entry_id: int, error: Exception, *, away: bool,
    base_s: float,
) -> None:
    """Count the failure; hold the turn with backoff only when the service answered the
    probe (the turn's own failure). Away, the health registry's line says it all."""
    if away:
        await outbox.run(IngestOutbox.retry_later, entry_id, _at_once)
        return
    delay = await outbox.run(
        IngestOutbox.retry_later, entry_id,
        lambda failures: backoff_delay(failures, base_s=base_s, max_s=RETRY_MAX_S))
    log.info("identity ingest failed (%s); retry in %.0fs", described(error), delay)


def _at_once(failures: int) -> float:
    return 0.0

