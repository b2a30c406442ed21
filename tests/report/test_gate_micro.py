"""`wsmode gate` on pytest-benchmark JSON: a real run of two tiny benchmarks, then doctored copies.

The baseline is what pytest-benchmark itself writes (`--benchmark-json`, every round kept with
`--benchmark-save-data`, as `scripts/microbench` runs it); the current file is that run with one
benchmark's times multiplied, so the regression is known exactly.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli

BENCHMARKS = '''
def test_sum(benchmark):
    """A small sum."""
    benchmark(sum, range(200))


def test_sorted(benchmark):
    """A small sort."""
    benchmark(sorted, list(range(200, 0, -1)))
'''
TIMES = ("min", "max", "mean", "stddev", "median", "iqr", "q1", "q3", "ld15iqr", "hd15iqr")
TIMES += ("total",)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """pytest-benchmark's own JSON of a real run (every round kept)."""
    folder = tmp_path_factory.mktemp("micro")
    (folder / "test_tiny.py").write_text(BENCHMARKS)
    out = folder / "run.json"
    # pytest-benchmark turns itself off in an xdist worker (it reads PYTEST_XDIST_WORKER, which
    # this child would inherit under `pytest -n`): the child must measure, so it runs without them
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", str(folder / "test_tiny.py"), "-q"),
            *("-p", "no:cacheprovider", "-c", "/dev/null", f"--rootdir={folder}"),
            *("--benchmark-save-data", "--benchmark-max-time=0.01", "--benchmark-min-rounds=40"),
            f"--benchmark-json={out}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run: dict[str, Any] = json.loads(out.read_text())
    assert {b["name"] for b in run["benchmarks"]} == {"test_sum", "test_sorted"}
    return run


def slowed(run: dict[str, Any], name: str, factor: float) -> dict[str, Any]:
    """`run` with every time of benchmark `name` multiplied by `factor`."""
    doctored = copy.deepcopy(run)
    for benchmark in doctored["benchmarks"]:
        if benchmark["name"] == name:
            stats = benchmark["stats"]
            for key in TIMES:
                stats[key] *= factor
            if "data" in stats:
                stats["data"] = [t * factor for t in stats["data"]]
            stats["ops"] /= factor
    return doctored


def write(path: Path, run: dict[str, Any]) -> str:
    path.write_text(json.dumps(run))
    return str(path)


def gate(tmp_path: Path, baseline: dict[str, Any], current: dict[str, Any]) -> int:
    return cli(
        [
            "gate",
            "--baseline",
            write(tmp_path / "baseline.json", baseline),
            "--current",
            write(tmp_path / "current.json", current),
        ]
    )


def rows(text: str) -> dict[str, str]:
    """benchmark name -> its status, from the gate's table."""
    out = {}
    for line in text.splitlines():
        if line.startswith("test_tiny.py::"):
            out[line.split()[0].split("::")[1]] = line.split()[-1]
    return out


def test_a_slowed_benchmark_is_a_regression(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    assert gate(tmp_path, real_run, slowed(real_run, "test_sorted", 3.0)) == 1
    out = capsys.readouterr().out
    assert out.startswith("wsmode gate (micro)")
    assert rows(out) == {"test_sum": "ok", "test_sorted": "REGRESSION"}
    assert "+200.0%" in out and "FAIL: 1 regression(s)" in out and "test_sorted time_us" in out


def test_the_same_run_passes_and_a_faster_one_is_an_improvement(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    assert gate(tmp_path, real_run, real_run) == 0
    assert set(rows(capsys.readouterr().out).values()) == {"ok"}
    assert gate(tmp_path, real_run, slowed(real_run, "test_sum", 0.25)) == 0
    assert rows(capsys.readouterr().out)["test_sum"] == "improved"


def test_a_change_within_the_baseline_spread_is_noise(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    """+30 %, beyond the 10 % limit with a tight interval, but the baseline's IQR is wider."""
    noisy = copy.deepcopy(real_run)
    for benchmark in noisy["benchmarks"]:
        benchmark["stats"]["iqr"] = benchmark["stats"]["median"]
    assert gate(tmp_path, noisy, slowed(noisy, "test_sorted", 1.3)) == 0
    assert rows(capsys.readouterr().out)["test_sorted"] == "noisy"


def test_a_change_its_fastest_round_does_not_show_is_noise(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    """The typical round 3x slower, the fastest one as fast as before: a busy machine."""
    loaded = slowed(real_run, "test_sorted", 3.0)
    fastest = {b["name"]: b["stats"]["min"] for b in real_run["benchmarks"]}
    for benchmark in loaded["benchmarks"]:
        benchmark["stats"]["min"] = fastest[benchmark["name"]]
    assert gate(tmp_path, real_run, loaded) == 0
    assert rows(capsys.readouterr().out)["test_sorted"] == "noisy"


def test_summaries_only_still_gate(real_run: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    """A run saved without every round's time (no --benchmark-save-data) gates on its medians."""
    bare = copy.deepcopy(real_run)
    for benchmark in bare["benchmarks"]:
        del benchmark["stats"]["data"]
    assert gate(tmp_path, bare, slowed(bare, "test_sum", 3.0)) == 1
    assert rows(capsys.readouterr().out) == {"test_sum": "REGRESSION", "test_sorted": "ok"}


def test_a_missing_benchmark_is_reported_not_failed(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    fewer = copy.deepcopy(real_run)
    fewer["benchmarks"] = [b for b in fewer["benchmarks"] if b["name"] == "test_sum"]
    assert gate(tmp_path, real_run, fewer) == 0
    assert rows(capsys.readouterr().out)["test_sorted"] == "insufficient-data"


def test_runs_timed_by_different_clocks_are_not_compared(
    real_run: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    cpu = slowed(real_run, "test_sum", 3.0)
    for benchmark in cpu["benchmarks"]:
        benchmark["options"]["timer"] = "time.process_time"
    assert gate(tmp_path, real_run, cpu) == 0
    out = capsys.readouterr().out
    assert set(rows(out).values()) == {"insufficient-data"}


def test_unlike_files_are_refused(
    real_run: dict[str, Any], tmp_path: Path, synth: Any, capsys: Any
) -> None:
    results = tmp_path / "bench.json"
    results.write_text(json.dumps(synth.bench(seed=1)))
    micro = write(tmp_path / "micro.json", real_run)
    assert cli(["gate", "--baseline", micro, "--current", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wsmode gate: cannot compare a pytest-benchmark run with a results file")
    broken = copy.deepcopy(real_run)
    del broken["benchmarks"][0]["stats"]["median"]
    assert cli(["gate", "--baseline", micro, "--current", write(tmp_path / "b.json", broken)]) == 2
    assert "without a name, a median and a minimum" in capsys.readouterr().err
