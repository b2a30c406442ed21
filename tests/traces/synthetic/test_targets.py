"""The generator takes its target distributions as a parameter: changing one moves what it
generates, a JSON file overrides fields by name."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from harness.traces.format import validate_rollout
from harness.traces.synthetic.generator import generate_corpus
from harness.traces.synthetic.targets import CALIBRATED, UNCALIBRATED, load_targets


def _waits(targets):  # type: ignore[no-untyped-def]
    rollouts = generate_corpus(6, seed=3, targets=targets)
    return [t.tool_wait_ms for r in rollouts for t in r.turns if t.answered_call_ids]


def test_a_target_moves_what_is_generated() -> None:
    slow = CALIBRATED.with_changes(tool_wait_median_ms=2500.0, test_wait_median_ms=15000.0)
    ratio = statistics.median(_waits(slow)) / statistics.median(_waits(CALIBRATED))
    assert 5 <= ratio <= 20  # 10x the medians, the same seeds
    talky = CALIBRATED.with_changes(user_turn_prob=0.5)
    for r in generate_corpus(3, seed=3, targets=talky):
        validate_rollout(r)
        replies = sum(not t.function_calls for t in r.turns[:-1]) / (len(r.turns) - 1)
        assert replies > 0.25 and r.meta["targets"] == "custom"
    fixed = CALIBRATED.with_changes(turns_range={"bug_fix": (7, 7)})
    assert [
        len(r.turns) for r in generate_corpus(2, seed=1, kinds=("bug_fix",), targets=fixed)
    ] == [7, 7]


def test_targets_from_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "targets.json"
    path.write_text(json.dumps({"tool_wait_median_ms": 90, "parallel_calls": [2, 3],
                                "turns_range": {"bug_fix": [5, 9]}}))  # fmt: skip
    t = load_targets(path)
    assert (t.tool_wait_median_ms, t.parallel_calls) == (90, (2, 3))
    assert dict(t.turns_range) == {"bug_fix": (5, 9)}
    assert t.reasoning_prob == CALIBRATED.reasoning_prob  # the rest is the base's
    assert load_targets(path, base=UNCALIBRATED).reasoning_prob == UNCALIBRATED.reasoning_prob
    path.write_text(json.dumps({"tool_wait_p50": 1}))
    with pytest.raises(ValueError, match="unknown target 'tool_wait_p50'"):
        load_targets(path)
    assert json.loads(json.dumps(CALIBRATED.to_json()))["turns_range"]["refactor"] == [35, 90]


def test_traces_generate_takes_a_targets_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main as wsmode
    from harness.traces.format import load_traces

    targets = tmp_path / "t.json"
    targets.write_text(json.dumps({"turns_range": {"bug_fix": [4, 4]}, "user_turn_prob": 0}))
    out = tmp_path / "g.jsonl"
    args = ["traces", "generate", "--count", "2", "--kind", "bug_fix", "--out", str(out)]
    assert wsmode([*args, "--targets", str(targets)]) == 0
    rollouts = load_traces(out)
    assert [len(r.turns) for r in rollouts] == [4, 4]
    assert {r.meta["targets"] for r in rollouts} == {"custom"}
    targets.write_text('{"nope": 1}')
    assert wsmode([*args, "--targets", str(targets)]) == 2
    assert wsmode([*args, "--targets", str(tmp_path / "absent.json")]) == 2
    assert wsmode(["traces", "generate", "--out", str(tmp_path), "--targets", str(targets)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "unknown target 'nope'" in err[0]
    assert "No such file" in err[1] and "--targets needs --count" in err[2]
