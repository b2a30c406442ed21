"""`wsmode load`'s options (harness.options): the target (shared with `wsmode bench`), the
modes, the bounds, the client processes, the run's seed and the output; each mode's request shape
and load pattern are the options `LoadSpec` declares (harness.load.fixed.load_spec)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.load.core.modes import Mode, parse_modes
from harness.load.fixed.load_spec import SHAPE
from harness.load.fixed.processes import default_processes
from harness.load.observe_options import OBSERVE, ObserveOptions
from harness.load.target_options import LOAD_PATTERN, OUTPUT, TargetOptions
from harness.options import cli, nested, option

#: how long a run without --requests or --duration-s sends
DURATION_WITHOUT_REQUESTS_S = 10.0


@dataclass
class LoadConfig(TargetOptions):
    modes: tuple[Mode, ...] = option(
        ("ws",),
        "--modes",
        to_field=parse_modes,
        group=SHAPE,
        help="comma-separated ws,http,http-chained",
    )
    requests: int | None = option(
        None, "--requests", type=int, group=LOAD_PATTERN, help="stop after N requests (per mode)"
    )
    duration_s: float | None = option(
        None,
        "--duration-s",
        type=float,
        group=LOAD_PATTERN,
        shown=f"{DURATION_WITHOUT_REQUESTS_S:g} s without --requests",
        help="stop sending after N s",
    )
    processes: int = field(
        default_factory=default_processes,
        metadata=cli(
            "--processes",
            type=int,
            group=LOAD_PATTERN,
            shown=f"cores, {default_processes()}",
            help="client processes, each its own event loop",
        ),
    )
    seed: int | None = option(
        None,
        "--seed",
        type=int,
        group=LOAD_PATTERN,
        shown="a fresh one per run, recorded in the results",
        help="the run's seed (prompts and arrivals; each mode derives its own from it)",
    )
    out: str = option("results", "--out", group=OUTPUT, help="results root")
    label: str = option("load", "--label", group=OUTPUT, help="results file label")
    observe: ObserveOptions = field(default_factory=ObserveOptions, metadata=nested(OBSERVE))

    @property
    def bounds(self) -> tuple[int | None, float | None]:
        """(requests, duration in s) of each mode: without either, the default duration."""
        if self.requests is None and self.duration_s is None:
            return None, DURATION_WITHOUT_REQUESTS_S
        return self.requests, self.duration_s
