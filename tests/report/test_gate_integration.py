"""The gate on real runs: two benches of the same server pass, a slowed-down server fails,
and a conformance MUST regression fails (the issue's acceptance test, end to end via the CLI)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.cli import main as cli
from harness.results.store import list_results
from reference_server.cost_profiles import load_cost_profile

SMOKE = Path(__file__).resolve().parents[2] / "traces" / "smoke.jsonl"


def write_profile(path: Path, extra_queue_ms: float) -> str:
    """burst-4000tps without jitter, with `extra_queue_ms` more engine queueing per response."""
    base = load_cost_profile("burst-4000tps")
    profile = dataclasses.replace(
        base, jitter_fraction=0.0, queue_ms=base.queue_ms + extra_queue_ms
    )
    lines = [f'name = "{path.stem}"']
    for field in dataclasses.fields(profile):
        value = getattr(profile, field.name)
        if field.name not in ("name", "description") and value is not None:
            lines.append(f"{field.name} = {float(value)!r}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def bench(out: Path, profile: str, label: str) -> Path:
    argv = [
        "bench",
        "--traces",
        str(SMOKE),
        "--per-kind",
        "0",
        "--repeats",
        "4",
        "--max-turns",
        "3",
        "--modes",
        "ws,http",
        "--profile",
        profile,
        "--time-scale",
        "0",
        "--concurrency",
        "3",
        "--out",
        str(out),
        "--label",
        label,
        "--no-html",
    ]
    assert cli(argv) == 0
    [info] = [i for i in list_results(out) if i.label == label]
    return info.path


def test_gate_passes_the_same_server_and_fails_a_slower_one(tmp_path: Path) -> None:
    # one profile path (the same workload), the server behind it slowed down between runs, as
    # a code change would slow it: a different profile would be another workload (refused)
    profile = write_profile(tmp_path / "server.toml", 0.0)
    baseline = bench(tmp_path / "results", profile, "baseline")
    again = bench(tmp_path / "results", profile, "again")
    # 120 ms more per response: beyond what a busy machine adds (+40 ms went unseen at load ~15)
    write_profile(tmp_path / "server.toml", 120.0)
    slow = bench(tmp_path / "results", profile, "slow")
    summary = tmp_path / "summary.md"
    assert cli(["gate", "--baseline", str(baseline), "--current", str(again)]) == 0
    assert (
        cli(
            [
                "gate",
                "--baseline",
                str(baseline),
                "--current",
                str(slow),
                "--markdown",
                str(summary),
            ]
        )
        == 1
    )
    text = summary.read_text()
    assert "ttft_ms" in text and "regress" in text.lower()


def certify(results: Path, *extra: str) -> int:
    return cli(["certify", "--results", str(results), "-k", "2.usage or 3.3", *extra])


def test_gate_fails_a_conformance_must_regression(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert certify(results) == 0
    assert certify(results, "--fault", "missing-usage") == 1
    # reports land in results/certify/<target>/<timestamp>/; a fault is part of the target name
    reports = {p.parents[1].name: p for p in results.glob("certify/*/*/report.json")}
    clean, faulty = str(reports["reference"]), str(reports["reference-missing-usage"])
    assert cli(["gate", "--baseline", clean, "--current", faulty]) == 1
    assert cli(["gate", "--baseline", clean, "--current", clean]) == 0
