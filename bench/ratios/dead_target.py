"""How long `wsmode certify` takes to give up on a target that stopped answering.

    python bench/ratios/dead_target.py [--repeats 3] [--event-timeout 10]

Canned targets on 127.0.0.1 (tests/conformance/servers.py), each certified with the whole suite
in a subprocess as a user would (`python -m harness.cli certify --target URL`), at the default
timeouts (event 10 s, response 25 s) unless told: a black hole (accepts the upgrade, never
answers), an error-swallowing target (answers good creates, stays silent where an error event is
due), targets that go wrong after their first create (`endless`: deltas every 20 ms and never a
terminal; `drip`: a delta every 0.5 s; `dies`: stops listening and drops its connections), and a
conformant canned target as the side-by-side baseline. Prints the median wall time of each, the
exit status and the not-run count from report.json, and the ratio to the baseline. The bound the
issue sets is 60 s per dead target; the tests assert verdicts and counts, never this time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conformance.servers import running

MODES = ("ok", "no-answer", "swallow-errors", "endless", "drip", "dies")


def certify_once(mode: str, event_timeout_s: float) -> tuple[float, int, int | None]:
    with running(mode) as server, tempfile.TemporaryDirectory() as results:
        started = time.perf_counter()
        code = subprocess.run(
            [sys.executable, "-m", "harness.cli", "certify", "--target", server.url,
             "--event-timeout", str(event_timeout_s), "--results", results],
            capture_output=True, check=False,
        ).returncode  # fmt: skip
        seconds = time.perf_counter() - started
        reports = list(Path(results).glob("certify/*/*/report.json"))
        stopped = json.loads(reports[0].read_text())["certify"].get("stopped") if reports else None
        return seconds, code, stopped["not_run"] if stopped else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--event-timeout", type=float, default=10.0)
    parser.add_argument("--mode", action="append", choices=MODES, help="default: every mode")
    args = parser.parse_args()
    modes = ["ok", *(m for m in args.mode or MODES if m != "ok")]
    medians: dict[str, float] = {}
    for mode in modes:
        runs = [certify_once(mode, args.event_timeout) for _ in range(args.repeats)]
        medians[mode] = statistics.median(r[0] for r in runs)
        codes = sorted({r[1] for r in runs})
        print(
            f"{mode:<15} median {medians[mode]:6.1f} s over {args.repeats} runs "
            f"(min {min(r[0] for r in runs):.1f}, max {max(r[0] for r in runs):.1f}); "
            f"exit {codes}; not run {[r[2] for r in runs]}"
        )
    for mode in modes[1:]:
        print(f"{mode:<15} / ok = {medians[mode] / medians['ok']:.2f}")


if __name__ == "__main__":
    main()
