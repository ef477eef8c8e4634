"""The sweep after a forget: facts the backend drew late from what was said before it go.

Run every minute by a long-running process (``bridge/housekeeping.py``) and by `thoth
worker`; a sweep that fails is tried again the next round. Sweeping twice deletes
nothing twice, so replicas need no lease for it.
"""

from __future__ import annotations

import logging

from layers.identity.protocol import IdentityBackend
from layers.identity.tombstones import Tombstones
from layers.shared.offloaded import Offloaded

log = logging.getLogger(__name__)


async def sweep_forgotten(
    tombstones: Offloaded[Tombstones], backend: IdentityBackend
) -> list[str]:
    """Sweep each forget whose settling time is over; returns the swept people's keys."""
    swept: list[str] = []
    for stone in await tombstones.run(lambda stones: stones.due()):
        deleted = await backend.sweep(stone.person, stone.forgotten_at)
        await tombstones.run(Tombstones.mark_swept, stone)
        log.info("forget of %s swept: %d fact(s) made late deleted; their new turns go now",
                 stone.person.key, deleted)
        swept.append(stone.person.key)
    return swept
