"""What `wsmode bench` prints about equal work: the equal-pair count beside every speedup and
each unequal pair named, read from the results document."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.load.bench.bench_config import BenchConfig, describe_schedule
from harness.load.bench.bench_console import format_table, format_work
from harness.load.core.results_document import paired_comparisons
from tests.results.conftest import bench_result


def _diverging_run() -> dict[str, Any]:
    result = bench_result(rollouts=5, turns=4)
    bench = result["bench"]
    for sample in bench["samples"]:
        if sample["mode"] == "ws" and sample["rollout_id"] == "r004":
            sample["context_tokens"] = round(sample["context_tokens"] * 1.3)
    for rollout in bench["rollouts"]:
        rollout["model_ms"] = rollout["e2e_ms"]
    comparisons = paired_comparisons(bench["rollouts"], bench["samples"], ["http", "ws"], seed=0)
    bench["comparisons"] = [c.to_dict() for c in comparisons]
    return result


def test_the_console_counts_equal_pairs_beside_the_speedup_and_names_the_others() -> None:
    result = _diverging_run()
    table = format_table(result)
    header = next(line for line in table.splitlines() if "speedup e2e" in line)
    assert header.rstrip().endswith("equal work")
    ws_row = next(line for line in table.splitlines() if line.startswith("ws ") and "4/5" in line)
    assert "(4 pairs)" in ws_row  # the speedup rests on the four equal pairs
    work = " ".join(format_work(result).split())
    assert "UNEQUAL PAIRS: 1 of 5 ws vs http pairs did not do equal work" in work
    assert "r004" in work and "+30%" in work


def test_the_header_says_whether_the_modes_interleaved_or_ran_one_after_another() -> None:
    interleaved = describe_schedule(BenchConfig(concurrency=2))
    sequential = describe_schedule(BenchConfig(engine_metrics_url="http://127.0.0.1:9/metrics"))
    assert interleaved.endswith(
        "the modes interleaved (each rollout in every mode, in rotating order)"
    )
    assert sequential.endswith("the modes ran one after another (never at once)")


def test_load_help_says_http_turns_resend_the_conversation(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli_main(["load", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "http resends the whole conversation so far with each one" in text
    assert "stands alone" not in text
