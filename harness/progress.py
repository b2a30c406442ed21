"""Live progress for the long commands (bench, load, certify): one line, and how numbers read.

On a terminal the line is rewritten in place (carriage return, clear to the end of the line) at
most every `TTY_EVERY_S`: done/total, the current rate, the ETA, failures, and whatever detail
the command adds. Elsewhere (a CI log, a pipe) a plain line is written every `PLAIN_EVERY_S`
instead, so logs stay short. Either way the line fits the console (at most `MAX_COLUMNS`).
`note()` writes a permanent line above the live one; `close()` ends the live line.

A `Progress` without a total is a phase ("starting the embedded reference server"): it shows
the time spent so far, and `close()` says how long it took. `ticking()` keeps the line moving
(elapsed, ETA) while the command waits on something that reports nothing.

Stdlib only and shared by every layer, like harness.usage (tests/test_layering.py).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Final, TextIO

MAX_COLUMNS: Final = 100  # every line wsmode prints fits this many columns
TTY_EVERY_S: Final = 0.2
PLAIN_EVERY_S: Final = 10.0
RATE_WINDOW_S: Final = 5.0  # the current rate: over the last few seconds


def console_width(stream: TextIO | None = None) -> int:
    """Columns to fill: the terminal's width for a terminal, capped at MAX_COLUMNS."""
    if stream is not None and is_terminal(stream):
        return max(40, min(MAX_COLUMNS, shutil.get_terminal_size((MAX_COLUMNS, 24)).columns))
    return MAX_COLUMNS


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def count(n: float) -> str:
    """A count with thousands separators: 12,345 (a float with one decimal: 1,234.5)."""
    return f"{n:,}" if isinstance(n, int) else f"{n:,.1f}"


def clock(seconds: float) -> str:
    """A duration as m:ss, or h:mm:ss from an hour on."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def fit(line: str, width: int) -> str:
    """`line` cut to `width` columns, an ellipsis marking the cut."""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


class Progress:
    """One live progress line on `stream` (default stderr); see the module docstring.

    `total` is the work to do in `unit`s (None: a phase without a total); with `duration_s`
    the run is bounded by time, and the ETA is the time left of it.
    """

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        unit: str = "",
        duration_s: float | None = None,
        stream: TextIO | None = None,
        tty: bool | None = None,
        every_s: float | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.duration_s = duration_s
        self.stream = stream if stream is not None else sys.stderr
        self.tty = is_terminal(self.stream) if tty is None else tty
        self.every_s = (
            every_s if every_s is not None else TTY_EVERY_S if self.tty else PLAIN_EVERY_S
        )
        self.width = console_width(self.stream) if self.tty else MAX_COLUMNS
        self.now = now
        self.started = now()
        self.done = 0
        self.failed = 0
        self.detail = ""
        self._samples: deque[tuple[float, int]] = deque([(self.started, 0)])
        self._last_shown = float("-inf")
        self._live = False  # a rewritable line is on screen (terminal only)
        self._last_text = ""  # the line last written
        self._closed = False
        self._lock = threading.Lock()

    # -- what the command reports ----------------------------------------------------------------
    def restart(self) -> None:
        """The work starts now (not when the line was made): elapsed, rate and ETA from here."""
        with self._lock:
            self.started = self.now()
            self._samples = deque([(self.started, self.done)])

    def update(self, done: int, *, failed: int | None = None, detail: str | None = None) -> None:
        """Work done so far (and failures among it); shown if it is time to."""
        with self._lock:
            self.done = done
            if failed is not None:
                self.failed = failed
            if detail is not None:
                self.detail = detail
            at = self.now()
            self._samples.append((at, done))
            while len(self._samples) > 2 and at - self._samples[0][0] > RATE_WINDOW_S:
                self._samples.popleft()
            finished = self.total is not None and done >= self.total
            self._maybe_show(at, force=finished and self.tty)

    def advance(self, n: int = 1, *, failed: int = 0) -> None:
        self.update(self.done + n, failed=self.failed + failed)

    def tick(self) -> None:
        """Time moved on (elapsed, ETA): show the line again if it is time to."""
        with self._lock:
            self._maybe_show(self.now(), force=False)

    def note(self, text: str) -> None:
        """A permanent line (a failure, a phase done) above the live line."""
        with self._lock:
            self._clear()
            for line in text.splitlines() or [""]:
                self.stream.write(line + "\n")
            self._last_shown = float("-inf") if self.tty else self._last_shown
            self._maybe_show(self.now(), force=self.tty and not self._closed)

    def close(self, final: str | None = None) -> None:
        """End the live line; `final` (default: the line as it stands) stays on screen."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            text = fit(final if final is not None else self.line(self.now()), self.width)
            self._clear()
            if self.tty or text != self._last_text:  # a plain log has it already: not twice
                self.stream.write(text + "\n")
            self.stream.flush()

    @contextlib.contextmanager
    def ticking(self, every_s: float | None = None) -> Iterator[Progress]:
        """Tick from a thread while the body runs (for waits that report nothing)."""
        stop = threading.Event()
        interval = every_s if every_s is not None else min(self.every_s, 1.0)

        def run() -> None:
            while not stop.wait(interval):
                self.tick()

        thread = threading.Thread(target=run, name=f"progress-{self.label}", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    # -- the line ----------------------------------------------------------------------------------
    def elapsed_s(self, at: float | None = None) -> float:
        return (self.now() if at is None else at) - self.started

    def rate_per_s(self) -> float | None:
        """Work per second over the last RATE_WINDOW_S (None before there is any)."""
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 and d1 > d0 else None

    def eta_s(self, at: float) -> float | None:
        elapsed = at - self.started
        if self.duration_s is not None:
            left = max(0.0, self.duration_s - elapsed)
            if self.total is None or not self.done:
                return left
        if self.total is None or not self.done or elapsed <= 0:
            return None
        by_rate = (self.total - self.done) * elapsed / self.done
        return min(by_rate, left) if self.duration_s is not None else by_rate

    def line(self, at: float) -> str:
        elapsed = at - self.started
        if self.total is None and self.duration_s is None and not self.done:
            return fit(f"{self.label} ... {elapsed:.1f} s", self.width)
        parts = [self.label]
        unit = f" {self.unit}" if self.unit else ""
        if self.total is not None:
            parts.append(f"{count(self.done)}/{count(self.total)}{unit}")
        else:
            parts.append(f"{count(self.done)}{unit}")
        rate = self.rate_per_s()
        if rate is not None:
            parts.append(f"{count(round(rate, 1))}/s")
        if self.failed:
            parts.append(f"{count(self.failed)} failed")
        parts.append(clock(elapsed))
        eta = self.eta_s(at)
        if eta is not None:
            parts.append(f"ETA {clock(eta)}")
        if self.detail:
            parts.append(self.detail)
        return fit("  ".join(parts), self.width - (1 if self.tty else 0))

    def _maybe_show(self, at: float, *, force: bool) -> None:
        if self._closed or (not force and at - self._last_shown < self.every_s):
            return
        if not self.tty and self._last_shown == float("-inf") and not force:
            self._last_shown = at  # a plain log gets its first line after every_s, not at once
            return
        self._last_shown = at
        text = self._last_text = self.line(at)
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K")
            self._live = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self._live:
            self.stream.write("\r\x1b[K")
            self._live = False


@contextlib.contextmanager
def phase(label: str, stream: TextIO | None = None, *, tty: bool | None = None) -> Iterator[None]:
    """`label ...` while the body runs (its time ticking on a terminal), then `label: 1.2 s`."""
    progress = Progress(label, stream=stream, tty=tty)
    if not progress.tty:
        progress.stream.write(f"{label} ...\n")
        progress.stream.flush()
    try:
        with progress.ticking():
            yield
    except BaseException:
        progress.close(f"{label}: stopped after {progress.elapsed_s():.1f} s")
        raise
    progress.close(f"{label}: {progress.elapsed_s():.1f} s")
