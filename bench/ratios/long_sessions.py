"""The main job's headline on the calibrated corpus, and real long sessions benched beside it.

The long-session corpus is built at run time from the real recordings beside the checkout
(``../shared/recorded/set3``, or ``$WSMODE_RECORDED``): they reached the project through
repository snapshots, so they are never committed; where they are absent the script says so and
stops. It holds the real rollouts of at least ``--min-turns`` (18) turns the converters make of
them: two Codex CLI / Desktop rollouts (66 and 18 turns) and three Claude Code 2.0.76 sessions
(47, 67, and 55 turns split by a compaction into 37 + 18).

    python bench/ratios/long_sessions.py corpus --out DIR      # write the long-session corpus
    python bench/ratios/long_sessions.py reference --out DIR   # every real session it can read
                                                               # (the calibration reference)
    python bench/ratios/long_sessions.py bench [--repeats 3] [--per-kind 3] [--max-turns N]

``bench`` runs ``wsmode bench`` on the bundled (calibrated) corpus and on the long-session
corpus one after the other, same options, embedded reference server, and prints the headline
figures of both side by side (TTFT p50 http -> ws, model-side and end-to-end speedup with their
intervals), with the load average before each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.traces.converters import convert_claude_code, convert_codex  # noqa: E402
from harness.traces.converters.tracelab import convert_tracelab  # noqa: E402
from harness.traces.format import Rollout, dump_rollouts  # noqa: E402

RECORDED = Path(os.environ.get("WSMODE_RECORDED") or ROOT.parent / "shared" / "recorded")
SET3 = RECORDED / "set3" / "traces"
TRACELAB_EXAMPLE = ROOT / "tests" / "data" / "tracelab" / "sanitized" / "round_trace.jsonl"
#: Claude Code sessions of set3 and their sub-agent transcripts (the flattened file names of the
#: set do not follow Claude Code's layout, so the links are named here).
CLAUDE_SESSIONS: dict[str, tuple[str, ...]] = {
    "session-196820da.jsonl": (),
    "session-3fe1b6bc.jsonl": (),
    "session-624a4a58.jsonl": (),
    "session-9eda1058.jsonl": (),
    "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl": ("agent-36541525.jsonl", "agent-50243ee8.jsonl"),
    "incremental-subagents__turn-2.jsonl": (
        "incremental-subagents__turn-2__subagents__agent-a485154.jsonl",
    ),
}


def missing_reason() -> str | None:
    """Why the recordings cannot be read here, or None."""
    if not SET3.is_dir():
        return f"real recordings not found at {SET3} (set $WSMODE_RECORDED to their folder)"
    return None


def set3_rollouts() -> list[Rollout]:
    """Every rollout the converters make of set3's Codex and Claude Code sessions."""
    rollouts = [
        convert_codex(path, agent_kind="codex")
        for path in sorted((SET3 / "codex-rollout").glob("rollout-*.jsonl"))
    ]
    claude = SET3 / "claude-code"
    for name, agents in CLAUDE_SESSIONS.items():
        rollouts += convert_claude_code(
            claude / name, subagents=[claude / a for a in agents], agent_kind="claude-code"
        )
    return rollouts


def long_corpus(min_turns: int = 18) -> list[Rollout]:
    """The real rollouts of at least ``min_turns`` turns."""
    return [r for r in set3_rollouts() if len(r.turns) >= min_turns]


def reference_corpus() -> list[Rollout]:
    """The calibration reference: set3's sessions and TraceLab's example sessions."""
    return set3_rollouts() + convert_tracelab(TRACELAB_EXAMPLE, agent_kind="tracelab")


def _write(rollouts: Sequence[Rollout], out: Path, name: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / name
    dump_rollouts(rollouts, target)
    turns = sum(len(r.turns) for r in rollouts)
    print(f"{target}: {len(rollouts)} rollouts, {turns} turns ({[len(r.turns) for r in rollouts]})")
    return target


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _bench(traces: str, label: str, out: Path, extra: Sequence[str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "harness.cli", "bench", "--traces", traces, "--label", label]
    command += ["--out", str(out), "--no-html", *extra]
    print(f"$ {' '.join(command[2:])}   (load average {_loadavg()})", flush=True)
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    results = sorted((out / "bench").rglob(f"*-{label}.json"))
    doc: dict[str, Any] = json.loads(results[-1].read_text(encoding="utf-8"))
    return doc


def _headline(doc: dict[str, Any]) -> dict[str, Any]:
    ws = next(c for c in doc["bench"]["comparisons"] if c["mode"] == "ws")
    rollouts = doc["config"]["rollouts"]
    return {
        "rollouts": len(rollouts) if isinstance(rollouts, list) else rollouts,
        "ttft_p50_http_ms": ws["ttft_p50_baseline_ms"],
        "ttft_p50_ws_ms": ws["ttft_p50_ms"],
        "ttft_improvement_pct": ws["ttft_improvement_pct"],
        "model_speedup": ws["model_speedup_median"],
        "model_ci95": ws["model_ci95"],
        "e2e_speedup": ws["speedup_median"],
        "e2e_ci95": ws["ci95"],
        "pairs": ws["pairs"],
    }


def _row(name: str, h: dict[str, Any]) -> str:
    def ci(v: Any) -> str:
        return f"[{v[0]:.2f}, {v[1]:.2f}]" if isinstance(v, list | tuple) else "(no interval)"

    ttft = f"{h['ttft_p50_http_ms']:>8.0f} -> {h['ttft_p50_ws_ms']:>6.0f} ms"
    return (
        f"{name:<26} {h['pairs']:>5}  {ttft}"
        f"  {h['ttft_improvement_pct']:>+6.1f}%  {h['model_speedup']:.3f}x {ci(h['model_ci95'])}"
        f"  {h['e2e_speedup']:.3f}x {ci(h['e2e_ci95'])}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    for name in ("corpus", "reference"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True, type=Path)
        p.add_argument("--min-turns", type=int, default=18)
    b = sub.add_parser("bench")
    b.add_argument("--repeats", type=int, default=1)
    b.add_argument("--per-kind", type=int, default=3, help="of the bundled corpus (0: all)")
    b.add_argument("--max-turns", type=int, help="replay only the first N turns of each")
    b.add_argument("--min-turns", type=int, default=18)
    b.add_argument("--out", type=Path, help="results root (default: a temporary folder)")
    args = parser.parse_args(argv)
    reason = missing_reason()
    if reason is not None:
        print(f"long_sessions: {reason}", file=sys.stderr)
        return 2
    if args.action == "corpus":
        _write(long_corpus(args.min_turns), args.out, "long_sessions.jsonl")
        return 0
    if args.action == "reference":
        _write(reference_corpus(), args.out, "reference.jsonl")
        return 0
    with tempfile.TemporaryDirectory(prefix="wsmode-long-") as scratch:
        out = args.out or Path(scratch)
        long_file = _write(long_corpus(args.min_turns), Path(scratch), "long_sessions.jsonl")
        extra = ["--repeats", str(args.repeats)]
        if args.max_turns:
            extra += ["--max-turns", str(args.max_turns)]
        generated = _bench(
            "traces/corpus", "calibrated", out, [*extra, "--per-kind", str(args.per_kind)]
        )
        long = _bench(str(long_file), "long-sessions", out, [*extra, "--per-kind", "0"])
        print(f"\n{'corpus':<26} {'pairs':>5}  {'TTFT p50 http -> ws':>21}  {'gain':>7}  "
              "model-side [95% CI]      end to end [95% CI]")  # fmt: skip
        print(_row("generated (calibrated)", _headline(generated)))
        print(_row("real long sessions", _headline(long)))
        print(f"load average after: {_loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
