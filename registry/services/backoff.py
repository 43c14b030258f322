"""How long to wait before trying again: one formula for every retry of the registry.

Exponential, capped, with "equal jitter": the wait before attempt `n` lies between half and
all of `min(cap, first * 2**(n-1))`. Many callers that failed together (hosts restarted at
once, jobs that failed on one outage, writers that met on one head) spread out, and none
comes straight back. The dice are a parameter, so tests pin them.

Used by the write path's compare-and-swap retries (as a tenacity wait strategy), the
marketplace's durable jobs (`run_after`) and the sync client's watch loop.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tenacity import RetryCallState


def delay(attempt: int, *, first: float, cap: float, draw: float) -> float:
    """Seconds to wait before attempt `attempt` (1: the first retry); `draw` is in [0, 1)."""
    ceiling = min(cap, first * 2.0 ** (attempt - 1))
    return ceiling / 2 + draw * ceiling / 2


def tenacity_wait(
    first: float, cap: float, dice: Callable[[], float] = random.random
) -> Callable[[RetryCallState], float]:
    """`delay` as a tenacity wait strategy (tenacity counts attempts from 1)."""

    def wait(state: RetryCallState) -> float:
        return delay(state.attempt_number, first=first, cap=cap, draw=dice())

    return wait
