"""Returning a closed connection's memory to the operating system.

Measured (issue 42, `python bench/ratios/connection_scale.py greedy`): on a fresh server, one
connection queueing 165 creates of 3.1 MiB over 33 lanes took RSS from 41 to 792 MiB, and 3 s
after it closed RSS was still 671 MiB. Its Python objects were all gone (no session, lane, cache
or queued request left alive, `tests/reference_server/front/test_ws_session.py`): the pages
were glibc's, freed chunks kept in the heap below live small allocations, so `free()` could not
hand them back. Two things return them: the session drops its queues and caches the moment it
closes, before its other objects (66 and 145 MiB in two runs: freed together, more of the big
chunks coalesce), and `malloc_trim(0)` after such a connection (54 MiB alone, 56-58 with both,
over three runs). So a
connection that held many bytes trims once it is gone; small connections never pay for the
call. The trim runs in a thread (the GIL is dropped during a ctypes call), off the event loop.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import time
from collections.abc import Callable

_Trim = Callable[[int], int]


def _find_trim() -> _Trim | None:
    """glibc's malloc_trim, or None (musl, macOS, Windows: nothing to call)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: _Trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _find_trim()


class MemoryReturn:
    """Trims the allocator after a connection that held at least `threshold_bytes` closes, at
    most once per `min_interval_s` (a burst of closes trims once)."""

    def __init__(self, threshold_bytes: int, min_interval_s: float = 1.0) -> None:
        self.threshold_bytes = threshold_bytes
        self.min_interval_s = min_interval_s
        self.trims = 0  # trims run (the metrics' counter reads it)
        self._last = -min_interval_s
        self._running = False

    @property
    def available(self) -> bool:
        return _TRIM is not None and self.threshold_bytes > 0

    def after_close(self, held_bytes: int) -> None:
        """A connection that held `held_bytes` at its peak has closed; trim if worth it."""
        if not self.available or held_bytes < self.threshold_bytes or self._running:
            return
        now = time.monotonic()
        if now - self._last < self.min_interval_s:
            return
        self._last, self._running = now, True
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(self.trim_now))
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._running = False
        task.exception()  # retrieved: a failed trim only costs the memory it did not return

    def trim_now(self) -> None:
        if _TRIM is not None:
            _TRIM(0)
            self.trims += 1
