"""The load client's garbage-collector policy: loaded data frozen, young collections rarer.

A load client allocates containers for every event it reads (the parsed event, its `TimedEvent`)
and keeps a turn's events until the turn is scored. Under CPython's defaults a young collection
runs every 700 container allocations and every tenth one also walks the middle generation, so the
collector's cost grows with what is kept: on one response of 200,000 deltas
(`bench/ratios/client_ceiling.py`) it took 3.3 ms per 1,000 events, 40 % of the client's CPU, and
held the client to 0.56 of a bare receive loop. With this policy: ~0.6 ms, and 0.8-0.94 of the bare
loop over repeated runs.

- `gc.freeze()` moves everything alive at the start (modules, the loaded traces: the bundled
  corpus is ~9 MB of JSON) out of the collector's reach, so no collection walks it again.
- A young generation of 50,000 objects instead of 700, and a middle one of 20 young collections:
  the same objects are examined, a few hundred times less often. Garbage cycles (a failed turn's
  exception and its frames) are still collected, only later; memory stays bounded by the
  thresholds, a few MB of young objects.

Process-wide, like the collector itself: `load_gc()` restores the previous settings on exit and
nests (only the outermost use changes anything).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_OBJECTS = 50_000  # allocations (minus deallocations) between young collections
MIDDLE_AFTER = 20  # young collections between collections of the middle generation

_depth = 0


@contextlib.contextmanager
def load_gc() -> Iterator[None]:
    """Run the block under the load client's GC policy; nestable, restores the old one."""
    global _depth
    outermost = _depth == 0
    previous = gc.get_threshold()
    _depth += 1
    if outermost:
        gc.freeze()
        gc.set_threshold(YOUNG_OBJECTS, MIDDLE_AFTER, previous[2])
    try:
        yield
    finally:
        _depth -= 1
        if outermost:
            gc.set_threshold(*previous)
            gc.unfreeze()
