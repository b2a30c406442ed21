"""--slo targets and goodput (harness.results.slo): parsing, per-turn and per-rollout counting,
the results section, and pooling for the board."""

from __future__ import annotations

from typing import Any

import pytest

from harness.results.schema import ResultsSchemaError, validate_result
from harness.results.slo import (
    SloTarget,
    format_goodput,
    mode_goodput,
    parse_slo,
    pooled_goodput,
    slo_section,
    turn_met,
)


def _turn(rid: str, index: int, ttft: float | None, e2e: float, ok: bool = True) -> dict[str, Any]:
    return {
        "rollout_id": rid,
        "mode": "ws",
        "turn_index": index,
        "ttft_ms": ttft,
        "itl_ms": None,
        "turn_e2e_ms": e2e,
        "ok": ok,
    }


def test_the_issue_example_parses_into_two_targets() -> None:
    targets = parse_slo("ttft_ms:p99<=500,e2e_ms:p90<=2000")
    assert targets == (SloTarget("ttft_ms", 99.0, 500.0), SloTarget("e2e_ms", 90.0, 2000.0))
    assert [t.key for t in targets] == ["ttft_ms", "turn_e2e_ms"]
    assert [str(t) for t in targets] == ["ttft_ms:p99<=500", "e2e_ms:p90<=2000"]
    assert parse_slo(" rollout_e2e_ms : p50 <= 9000ms ")[0].per_rollout


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ttft_ms<=500", "expected METRIC:pNN<=MS"),
        ("latency_ms:p99<=5", "unknown metric 'latency_ms'"),
        ("ttft_ms:p0<=5", "percentile must be in (0, 100]"),
        ("ttft_ms:p101<=5", "percentile must be in (0, 100]"),
        ("ttft_ms:p99<=0", "limit must be > 0"),
        ("ttft_ms:p99<=5,ttft_ms:p50<=1", "ttft_ms is named twice"),
        ("e2e_ms:p99<=5,turn_e2e_ms:p50<=1", "turn_e2e_ms is named twice"),
        (",", "no target given"),
    ],
)
def test_bad_targets_are_refused_naming_the_option(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"^--slo: ") as caught:
        parse_slo(text)
    assert says in str(caught.value)


def test_a_turn_counts_only_if_it_met_every_limit() -> None:
    targets = parse_slo("ttft_ms:p99<=100,e2e_ms:p90<=1000,itl_ms:p50<=5")
    assert turn_met(_turn("r", 0, 100.0, 1000.0), targets)  # limits are inclusive
    assert not turn_met(_turn("r", 0, 100.1, 10.0), targets)
    assert not turn_met(_turn("r", 0, 1.0, 1000.1), targets)
    assert not turn_met(_turn("r", 0, 1.0, 1.0, ok=False), targets)  # a failure met nothing
    assert not turn_met(_turn("r", 0, None, 1.0), targets)  # no first token: no TTFT met
    # no inter-token gap (itl_ms None): an ITL limit cannot be missed
    assert turn_met(_turn("r", 0, 1.0, 1.0), targets)


def test_goodput_counts_turns_and_rollouts_and_pairs_repeated_replays() -> None:
    targets = parse_slo("ttft_ms:p50<=100,rollout_e2e_ms:p50<=5000")
    samples = [
        _turn("a", 0, 50.0, 10.0),
        _turn("a", 1, 50.0, 10.0),
        _turn("a", 0, 50.0, 10.0),  # the second replay of a: one slow turn
        _turn("a", 1, 500.0, 10.0),
        _turn("b", 0, 50.0, 10.0),
    ]
    rollouts = [
        {"rollout_id": "a", "mode": "ws", "ok": True, "e2e_ms": 1000.0, "turns": 2},
        {"rollout_id": "a", "mode": "ws", "ok": True, "e2e_ms": 1000.0, "turns": 2},
        {"rollout_id": "b", "mode": "ws", "ok": True, "e2e_ms": 6000.0, "turns": 1},  # too slow
        {"rollout_id": "c", "mode": "ws", "ok": False, "e2e_ms": None, "turns": 0},
    ]
    entry = mode_goodput(targets, samples, rollouts)
    assert (entry["turns"], entry["turns_good"], entry["turn_goodput"]) == (5, 4, 0.8)
    assert (entry["rollouts"], entry["rollouts_good"], entry["rollout_goodput"]) == (4, 1, 0.25)
    ttft, rollout_e2e = entry["attainment"]
    assert ttft == {"target": "ttft_ms:p50<=100", "measured_ms": 50.0, "count": 5, "met": True}
    assert rollout_e2e["measured_ms"] == 1000.0 and rollout_e2e["met"]
    assert entry["met"]
    strict = mode_goodput(parse_slo("ttft_ms:p90<=100"), samples, rollouts)
    assert strict["attainment"][0]["measured_ms"] == 500.0 and not strict["met"]


def test_the_section_validates_and_reads_back_in_the_console_and_the_board(
    synth: Any,
) -> None:
    result = synth.bench(rollouts=6, turns=4)
    bench = result["bench"]
    targets = parse_slo("ttft_ms:p90<=1000000,e2e_ms:p50<=1")
    bench["slo"] = slo_section(targets, bench["samples"], bench["rollouts"], list(bench["modes"]))
    validate_result(result)
    ws = bench["slo"]["modes"]["ws"]
    assert ws["turns"] == 24 and ws["turns_good"] == 0 and not ws["met"]
    text = format_goodput(bench)
    assert "goodput under SLO ttft_ms:p90<=1000000, e2e_ms:p50<=1" in text
    assert "ws: goodput 0.0% of 24 turns, 0/6 rollouts; SLO missed: e2e_ms:p50<=1" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    pooled = pooled_goodput([bench, bench], "ws")
    assert pooled == (
        "0.0% of 48 turns, 0/12 rollouts under ttft_ms:p90<=1000000, e2e_ms:p50<=1 "
        "(2 runs, the SLO met in 0)"
    )
    assert pooled_goodput([synth.bench()["bench"]], "ws") is None
    bench["slo"]["modes"]["ws"]["turns_good"] = "many"
    with pytest.raises(ResultsSchemaError, match=r"bench\.slo\.modes\.ws\.turns_good"):
        validate_result(result)
