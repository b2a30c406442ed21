"""Token emission schedule: when each output token is due. Pure: times are passed in.

Token ``i`` (0-based) is due at ``start_s + ttft_s + i / tokens_per_s``. The server's loop sleeps
until :meth:`TokenSchedule.next_due_s` and, when it wakes (on time or late), emits every token
that is due by then as one delta. The achieved rate therefore tracks the configured rate even when
a single sleep is longer than one token's interval (4000 tok/s is 250 µs per token, below what an
asyncio loop can hit per wake-up); lateness shows up as larger deltas, never as a slower stream.

Typical use::

    sched = TokenSchedule(start_s=t0, ttft_s=plan.ttft_s,
                          tokens_per_s=plan.decode_tokens_per_s, total_tokens=n)
    emitted = 0
    while (due := sched.next_due_s(emitted)) is not None:
        await asyncio.sleep(max(0.0, due - clock()))
        upto = sched.due_count(clock())
        emit(pieces[emitted:upto])
        emitted = upto
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DeltaPacer", "TokenSchedule"]


@dataclass(frozen=True)
class TokenSchedule:
    """Due times of ``total_tokens`` tokens decoded at ``tokens_per_s`` after ``ttft_s``."""

    start_s: float
    ttft_s: float
    tokens_per_s: float
    total_tokens: int

    def __post_init__(self) -> None:
        if not math.isfinite(self.start_s):
            raise ValueError(f"start_s must be finite, got {self.start_s!r}")
        if not (math.isfinite(self.ttft_s) and self.ttft_s >= 0):
            raise ValueError(f"ttft_s must be finite and >= 0, got {self.ttft_s!r}")
        if math.isnan(self.tokens_per_s) or self.tokens_per_s <= 0:
            raise ValueError(f"tokens_per_s must be > 0, got {self.tokens_per_s!r}")
        if isinstance(self.total_tokens, bool) or not isinstance(self.total_tokens, int):
            raise ValueError(f"total_tokens must be an int, got {self.total_tokens!r}")
        if self.total_tokens < 0:
            raise ValueError(f"total_tokens must be >= 0, got {self.total_tokens!r}")

    @property
    def first_due_s(self) -> float:
        """When the first token is due (the scheduled time to first token)."""
        return self.start_s + self.ttft_s

    @property
    def end_s(self) -> float:
        """When the last token is due (``first_due_s`` if there are no tokens)."""
        return self.due_s(max(self.total_tokens - 1, 0))

    def due_s(self, index: int) -> float:
        """When token ``index`` is due (defined for any ``index >= 0``)."""
        if index < 0:
            raise ValueError(f"index must be >= 0, got {index!r}")
        return self.start_s + self.ttft_s + index / self.tokens_per_s

    def due_count(self, now_s: float) -> int:
        """How many tokens are due at ``now_s``: ``#{i < total : due_s(i) <= now_s}``."""
        first = self.first_due_s
        if self.total_tokens == 0 or now_s < first:
            return 0
        if math.isinf(self.tokens_per_s):
            return self.total_tokens
        estimate = (now_s - first) * self.tokens_per_s
        n = self.total_tokens if estimate >= self.total_tokens else math.floor(estimate) + 1
        # The estimate can be off by one from float rounding; settle it against due_s() itself,
        # so due_count(due_s(i)) > i holds exactly.
        while n < self.total_tokens and self.due_s(n) <= now_s:
            n += 1
        while n > 0 and self.due_s(n - 1) > now_s:
            n -= 1
        return n

    def next_due_s(self, emitted: int) -> float | None:
        """When the next token after ``emitted`` ones is due; None once all are emitted."""
        if emitted < 0:
            raise ValueError(f"emitted must be >= 0, got {emitted!r}")
        if emitted >= self.total_tokens:
            return None
        return self.due_s(emitted)

    def pending(self, now_s: float, emitted: int) -> int:
        """How many tokens to emit now, given ``emitted`` already sent (never negative)."""
        return max(self.due_count(now_s) - emitted, 0)


class DeltaPacer:
    """A server's bound on the deltas it sends per second, over all its streams at once.

    Each decoding stream waits at least `interval_s()` between two of its deltas (its due tokens
    coalesce meanwhile), so the deltas of all streams together stay under `max_deltas_per_s`:
    1,000 streams at 1,000 tok/s would otherwise ask for a million writes a second, far past what
    one process sends, and a server past its ceiling falls behind everywhere at once. A few
    streams are not slowed: the interval only exceeds a token's own interval once the streams
    together would send more than the bound. The last token of an item is never held back by
    it (see `inference._stream`), so a stream still ends on time. 0: no bound.
    """

    __slots__ = ("active", "max_deltas_per_s")

    def __init__(self, max_deltas_per_s: float = 0.0) -> None:
        if math.isnan(max_deltas_per_s) or max_deltas_per_s < 0:
            raise ValueError(f"max_deltas_per_s must be >= 0, got {max_deltas_per_s!r}")
        self.max_deltas_per_s = max_deltas_per_s
        self.active = 0  # streams decoding now

    def interval_s(self) -> float:
        """The least time between two deltas of one stream now (0.0: no bound)."""
        if not self.max_deltas_per_s:
            return 0.0
        return self.active / self.max_deltas_per_s
