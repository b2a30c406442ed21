"""Equal work judged per rollout pair: one diverging rollout is named, left out of the speedup,
and the equal-pair count stands beside it (console, results, board)."""

from __future__ import annotations

from typing import Any

from harness.load.core.results_document import paired_comparisons
from harness.results.work import (
    WORK_TOLERANCE,
    equal_pairs_note,
    equal_work_records,
    judge_pairs,
    unequal_work,
    work_check,
)

TURNS = 4


def _records(
    inputs: dict[str, dict[str, list[int]]], e2e_ms: dict[str, dict[str, float]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rollout records and samples: inputs[mode][rollout] = input tokens per turn."""
    rollouts, samples = [], []
    for mode, by_rollout in inputs.items():
        for rid, tokens in by_rollout.items():
            for index, value in enumerate(tokens):
                samples.append(
                    {
                        "rollout_id": rid,
                        "mode": mode,
                        "turn_index": index,
                        "ok": True,
                        "input_tokens": value,
                        "ttft_ms": 10.0,
                    }
                )
            e2e = e2e_ms[mode][rid]
            rollouts.append(
                {"rollout_id": rid, "mode": mode, "ok": True, "e2e_ms": e2e, "model_ms": e2e}
            )
    return rollouts, samples


def _five_pairs(diverging: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Five rollouts in http and ws; r4's ws turns carry `diverging` x the http input. The ws
    time of r4 is made very short, so a speedup that kept it would show it."""
    http = {f"r{i}": [1000 + 500 * t for t in range(TURNS)] for i in range(5)}
    ws = {rid: list(tokens) for rid, tokens in http.items()}
    ws["r4"] = [round(v * diverging) for v in http["r4"]]
    e2e = {
        "http": {rid: 1000.0 for rid in http},
        "ws": {**{rid: 800.0 for rid in http}, "r4": 100.0},
    }
    return _records({"http": http, "ws": ws}, e2e)


def test_one_rollout_of_five_diverging_by_30_percent_is_flagged_and_named() -> None:
    rollouts, samples = _five_pairs(1.3)
    # the median check of the whole run sees nothing: four of five pairs are equal
    assert unequal_work(samples, "http", "ws") is None
    pairs = judge_pairs(rollouts, samples, "http", "ws")
    assert [p.rollout_id for p in pairs if not p.equal] == ["r4"]
    check = work_check(rollouts, samples, "http", "ws")
    assert (check["pairs"], check["equal_pairs"]) == (5, 4)
    (flagged,) = check["unequal"]
    assert flagged["rollout_id"] == "r4" and flagged["ratio"] == 1.3
    assert flagged["worst_turn"]["turn_index"] in range(TURNS)
    assert "r4" in check["message"] and "+30%" in check["message"]
    assert equal_pairs_note(check) == "4 of 5 pairs equal work"


def test_a_pair_within_the_tolerance_is_equal_and_one_beyond_it_is_not() -> None:
    inside = work_check(*_five_pairs(1 + WORK_TOLERANCE / 2), "http", "ws")
    beyond = work_check(*_five_pairs(1 + 2 * WORK_TOLERANCE), "http", "ws")
    assert inside["equal_pairs"] == 5 and inside["message"] is None
    assert beyond["equal_pairs"] == 4


def test_a_pair_with_fewer_turns_in_one_mode_is_not_equal_work() -> None:
    http = {"r0": [100, 200, 300], "r1": [100, 200, 300]}
    ws = {"r0": [100, 200, 300], "r1": [100, 200]}  # same input per turn, one turn short
    e2e = {m: {"r0": 1.0, "r1": 1.0} for m in ("http", "ws")}
    check = work_check(*_records({"http": http, "ws": ws}, e2e), "http", "ws")
    (flagged,) = check["unequal"]
    assert (flagged["rollout_id"], flagged["mode_turns"], flagged["baseline_turns"]) == (
        "r1",
        2,
        3,
    )
    assert "2 turns in ws vs 3 in http" in check["message"]


def test_the_speedup_leaves_the_unequal_pair_out() -> None:
    rollouts, samples = _five_pairs(1.3)
    (comparison,) = paired_comparisons(rollouts, samples, ["http", "ws"], seed=0)
    # r4 (http/ws = 10) is out: the four equal pairs all have 1000/800
    assert comparison.pairs == 4
    assert comparison.speedup_median == 1000 / 800
    assert [rid for rid, _, _ in comparison.per_rollout] == ["r0", "r1", "r2", "r3"]
    stored = comparison.to_dict()["work"]
    assert stored["equal_pairs"] == 4 and stored["unequal"][0]["rollout_id"] == "r4"
    kept_rollouts, kept_samples = equal_work_records(
        rollouts, samples, "http", "ws", stored["unequal"]
    )
    assert {r["rollout_id"] for r in kept_rollouts} == {"r0", "r1", "r2", "r3"}
    assert len(kept_samples) == 2 * 4 * TURNS


def test_repeats_are_judged_one_replay_at_a_time() -> None:
    """The second replay of a rollout diverges: only that occurrence is named and dropped."""
    rollouts, samples = _records(
        {"http": {"r0": [100, 200]}, "ws": {"r0": [100, 200]}},
        {"http": {"r0": 10.0}, "ws": {"r0": 8.0}},
    )
    more_rollouts, more_samples = _records(
        {"http": {"r0": [100, 200]}, "ws": {"r0": [200, 400]}},
        {"http": {"r0": 10.0}, "ws": {"r0": 1.0}},
    )
    rollouts += more_rollouts
    samples += more_samples
    check = work_check(rollouts, samples, "http", "ws")
    (flagged,) = check["unequal"]
    assert flagged["occurrence"] == 1 and check["equal_pairs"] == 1
    (comparison,) = paired_comparisons(rollouts, samples, ["http", "ws"], seed=0)
    assert comparison.pairs == 1 and comparison.speedup_median == 10.0 / 8.0
