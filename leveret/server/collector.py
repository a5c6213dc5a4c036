"""Python's cycle collector set for a broker: startup state frozen, the young collected rarely."""

from __future__ import annotations

import gc

# Collections of the youngest generation every 700 allocations (CPython's default) walk the
# entries a busy queue holds and its unsettled deliveries: on a queue's home node serving another
# node's consumer with confirms and acks, a larger first threshold took 10-20 % off its CPU per
# message (no change with an empty queue, where little survives). Garbage cycles are rare on
# the message path (entries and frames are freed by reference counting), so they wait longer.
YOUNG_THRESHOLD = 20_000
OLDER_THRESHOLDS = (20, 20)


def settle_after_start() -> None:
    """What the node built while starting (modules, recovered queues) lives as long as the
    node: move it out of the collector's sight, and collect the young less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
