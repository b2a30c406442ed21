"""Scale of the load client: how many concurrent rollouts with tool waits one process drives.

    python bench/ratios/load_scale.py                          # 32 vs 500 rollouts, ~2 minutes
    python bench/ratios/load_scale.py --rollouts 32,2000,5000 --server-workers 2

One client process runs the engine `wsmode bench` and `wsmode load` share
(`harness.load.core`: the rollout driver, the closed loop, the load GC policy) with C rollouts
of the bundled corpus at once, each on its own WebSocket, each waiting its recorded tool time
(scaled so a wait averages `--mean-wait-s`) before every turn: sockets mostly idle, as in real
agent loops. The reference server runs in its own processes (`--server-workers`). Printed side by
side for each C, with ratios against 32:
- client RSS per rollout (peak during the run minus before, from /proc; beyond 32, the
  marginal cost: the peak's growth over the 32 row per added rollout);
- timing error: the tool waits' overshoot (waited minus intended: what the client's event loop
  adds to every wait) and the TTFT measurement error (client TTFT minus the server-stamped TTFT,
  as bench/ratios/measurement_error.py), p50 / p99 / max;
- turns done, turns failed, and the client's CPU share.
`--locust-workers W` runs the same levels again as W locust workers (`WsRolloutUser`s,
harness/load/LOCUST.md) for `--locust-seconds`: RSS and CPU of the workers, the figures from the
results file's samples.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness.bundled import corpus_dir
from harness.load.core.gc_policy import load_gc
from harness.load.core.measurements import RolloutResult
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.load.core.rollout_driver import replay_rollout
from harness.load.core.schedule import closed_loop
from harness.load.embedded_server import EmbeddedServer
from harness.results.stats import percentile
from harness.traces.format import Rollout, load_traces

BASELINE = 32
LOCUSTFILE = Path(__file__).resolve().parents[2] / "harness" / "load" / "locustfile.py"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class PeakRss:
    """This process's peak RSS while the block runs, sampled every 50 ms from a thread."""

    def __enter__(self) -> PeakRss:
        self.peak = rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mib())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_level(
    server: EmbeddedServer, rollouts: list[Rollout], count: int, args: argparse.Namespace
) -> dict[str, Any]:
    endpoint = Endpoint(server.ws_url, server.http_url)
    options = ReplayOptions(mode="ws", max_turns=args.turns, time_scale=args.time_scale)
    jobs = [rollouts[i % len(rollouts)] for i in range(count)]

    async def runner(rollout: Rollout, intended: int | None) -> RolloutResult:
        return await replay_rollout(rollout, endpoint, options)

    before, overflows_before = rss_mib(), listen_overflows()
    cpu_before, started = time.process_time(), time.perf_counter()
    with load_gc(), PeakRss() as peak:  # as `wsmode bench` runs its client
        results = asyncio.run(closed_loop(jobs, runner, concurrency=count))
    wall_s = time.perf_counter() - started
    used_s = time.process_time() - cpu_before
    samples = [t.to_sample() for r in results for t in r.turns]
    row = figures(samples, count, (peak.peak - before) / count, used_s / wall_s, args.time_scale)
    return row | {"peak_mib": peak.peak, "overflows": listen_overflows() - overflows_before}


def listen_overflows() -> int:
    """The kernel's count of connections a full accept queue dropped (machine-wide, TcpExt)."""
    lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()]
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names[0] == "TcpExt:" and "ListenOverflows" in names:
            return int(values[names.index("ListenOverflows")])
    return 0


def figures(
    samples: list[dict[str, Any]], count: int, mib_each: float, cpu_share: float, scale: float
) -> dict[str, Any]:
    """One row from the turns' samples (`bench.samples[]` entries)."""
    overshoot = [
        t["tool_wait_waited_ms"] - t["tool_wait_recorded_ms"] * scale
        for t in samples
        if t["tool_wait_waited_ms"]
    ]
    ttft_error = [
        t["ttft_ms"] - t["server_ttft_ms"]
        for t in samples
        if t["ok"] and t["turn_index"] >= 1 and t["ttft_ms"] is not None
        if t["server_ttft_ms"] is not None
    ]
    nan = float("nan")
    return {
        "rollouts": count,
        "turns": sum(1 for t in samples if t["ok"]),
        "failed": sum(1 for t in samples if not t["ok"]),
        "mib_each": mib_each,
        "wait_p50": percentile(overshoot, 50) if overshoot else nan,
        "wait_p99": percentile(overshoot, 99) if overshoot else nan,
        "wait_max": max(overshoot, default=nan),
        "ttft_p50": percentile(ttft_error, 50) if ttft_error else nan,
        "ttft_p99": percentile(ttft_error, 99) if ttft_error else nan,
        "ttft_max": max(ttft_error, default=nan),
        "cpu_share": cpu_share,
        "errors": failure_reasons(samples),
    }


def failure_reasons(samples: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """The failed turns' errors, most common first (each cut at 100 chars)."""
    counts: dict[str, int] = {}
    for sample in samples:
        if not sample["ok"]:
            reason = str(sample["error"])[:100]
            counts[reason] = counts.get(reason, 0) + 1
    return sorted(((n, reason) for reason, n in counts.items()), reverse=True)


def pids_rss_mib(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return total


def cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def run_locust(server: EmbeddedServer, count: int, args: argparse.Namespace) -> dict[str, Any]:
    """`count` WsRolloutUsers over `--locust-workers` locust workers (master + workers)."""
    out = Path(tempfile.mkdtemp(prefix="wsmode-load-scale-"))
    common = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]
    master = subprocess.Popen(
        [
            *common,
            "--master",
            "--headless",
            "--expect-workers",
            str(args.locust_workers),
            "-u",
            str(count),
            "-r",
            str(max(1, count // 5)),
            "-t",
            f"{args.locust_seconds}s",
            "--host",
            server.http_url,
            "--wsmode-time-scale",
            str(args.time_scale),
            "--wsmode-max-turns",
            str(args.turns),
            "--wsmode-out",
            str(out),
            "--only-summary",
            "WsRolloutUser",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = [
        subprocess.Popen(
            [*common, "--worker", "--master-host", "127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(args.locust_workers)
    ]
    pids = [w.pid for w in workers]
    time.sleep(3.0)  # the workers have imported and connected; none runs a user yet
    before, cpu_before, started = pids_rss_mib(pids), cpu_s(pids), time.perf_counter()
    peak = before
    while master.poll() is None:
        peak = max(peak, pids_rss_mib(pids))
        time.sleep(0.2)
    wall_s = time.perf_counter() - started
    used_s = cpu_s(pids) - cpu_before
    for worker in workers:
        worker.wait(30)
    (path,) = out.rglob("*-locust.json")
    samples = json.loads(path.read_text())["bench"]["samples"]
    cpu_share = used_s / wall_s / args.locust_workers
    row = figures(samples, count, (peak - before) / count, cpu_share, args.time_scale)
    return row | {"peak_mib": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", default="500", help="comma-separated C (32 is added)")
    parser.add_argument("--turns", type=int, default=8, help="turns replayed per rollout")
    parser.add_argument("--mean-wait-s", type=float, default=2.0, help="mean tool wait")
    parser.add_argument("--server-workers", type=int, default=2)
    parser.add_argument("--profile", default="spark-1000tps")
    parser.add_argument("--locust-workers", type=int, default=0, help="also over locust workers")
    parser.add_argument("--locust-seconds", type=int, default=60, help="each locust run")
    args = parser.parse_args()
    levels = sorted({BASELINE, *(int(n) for n in args.rollouts.split(","))})
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # one socket per rollout
    rollouts = load_traces(corpus_dir())
    waits = [t.tool_wait_ms for r in rollouts for t in r.turns[1 : args.turns] if t.tool_wait_ms]
    args.time_scale = args.mean_wait_s * 1000 / statistics.mean(waits) if waits else 0.0
    caps = str(max(levels) + 100)
    flags = ("--max-connections", caps, "--max-connections-per-key", caps)
    flags += ("--workers", str(args.server_workers)) if args.server_workers > 1 else ()
    started = time.monotonic()
    with EmbeddedServer(profile=args.profile, extra_args=flags) as server:
        run_level(server, rollouts, BASELINE, args)  # warm up both sides
        rows = [run_level(server, rollouts, count, args) for count in levels]
        if args.locust_workers:
            rows += [run_locust(server, count, args) for count in levels]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"one client process, ws, {args.turns} turns per rollout, "
        f"tool waits x{args.time_scale:.3g} "
        f"(mean {args.mean_wait_s:g} s), server {args.profile} x{args.server_workers} workers; "
        f"load average {load}"
    )
    print(
        f"{'rollouts':>9}{'turns':>7}{'fail':>5}{'MiB each':>9}{'CPU':>6}"
        f"{'wait+ p50':>10}{'p99':>7}{'max':>7}{'TTFT err p50':>13}{'p99':>7}{'max':>7}"
        f"{'x32 wait p99':>13}{'x32 err p99':>12}"
    )
    base = rows[0]
    for index, row in enumerate(rows):
        if index == len(levels):
            print(f"over {args.locust_workers} locust workers ({args.locust_seconds} s each):")
            base = row
        if row is not base:  # the marginal cost: fixed costs (imports, traces) cancel out
            added = row["rollouts"] - base["rollouts"]
            row["mib_each"] = (row["peak_mib"] - base["peak_mib"]) / added
        print(
            f"{row['rollouts']:>9.0f}{row['turns']:>7.0f}{row['failed']:>5.0f}"
            f"{row['mib_each']:>9.3f}{row['cpu_share']:>6.0%}"
            f"{row['wait_p50']:>10.2f}{row['wait_p99']:>7.2f}{row['wait_max']:>7.1f}"
            f"{row['ttft_p50']:>13.2f}{row['ttft_p99']:>7.2f}{row['ttft_max']:>7.1f}"
            f"{row['wait_p99'] / base['wait_p99']:>13.2f}"
            f"{row['ttft_p99'] / base['ttft_p99']:>12.2f}"
        )
    print("(ms; wait+ = a tool wait's overshoot, TTFT err = client minus server-stamped TTFT)")
    for row in rows:
        if row.get("overflows"):
            print(f"  {row['rollouts']:.0f} rollouts: {row['overflows']} listen-queue overflows")
        for count, reason in row["errors"][:3]:
            print(f"  {row['rollouts']:.0f} rollouts: {count} turns failed with {reason!r}")
    print(f"(ran in {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
