"""SWE-agent trajectories: real .traj files, tool_call_ids lists, re-minted ids, text actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters.swe_agent import ACTION_TOOL, convert_swe_agent
from harness.traces.format import TraceFormatError
from tests.recorded import TRACE_SAMPLES, needs

SAMPLES = TRACE_SAMPLES
pytestmark = needs(TRACE_SAMPLES)
FC_SIMPLE = SAMPLES / "swe-agent-function_calling_simple.traj"
TEST_REPO = SAMPLES / "swe-agent-6e44b9__sweagenttestrepo-1c2844.traj"
MARSHMALLOW = SAMPLES / "swe-agent-marshmallow-1867-function_calling.traj"
TEXT_ACTIONS = SAMPLES / "swe-agent-humanevalfix-python-0.traj"


def counts(path: Path) -> tuple[int, int, int]:
    r = convert_swe_agent(path)
    turns = len(r.turns)
    calls = sum(len(t.function_calls) for t in r.turns)
    linked = sum(len(t.answered_call_ids) for t in r.turns)
    return turns, calls, linked


@pytest.mark.parametrize(
    ("path", "expected"),
    [(FC_SIMPLE, (5, 5, 4)), (TEST_REPO, (4, 4, 3)), (MARSHMALLOW, (11, 11, 10))],
)
def test_real_function_calling_trajectories_link_calls_through_tool_call_ids(
    path: Path, expected: tuple[int, int, int]
) -> None:
    assert counts(path) == expected
    r = convert_swe_agent(path)
    assert r.source == "swe-agent" and r.instructions
    for prev, turn in zip(r.turns, r.turns[1:], strict=False):
        assert turn.answered_call_ids == prev.call_ids  # every call answered by its observation


def test_execution_times_become_tool_waits() -> None:
    r = convert_swe_agent(TEST_REPO)
    steps = json.loads(TEST_REPO.read_text(encoding="utf-8"))["trajectory"]
    assert [t.tool_wait_ms for t in r.turns[1:]] == [
        round(float(s["execution_time"]) * 1000, 1) for s in steps[: len(r.turns) - 1]
    ]


def test_a_demonstration_reusing_call_ids_gets_them_re_minted() -> None:
    r = convert_swe_agent(MARSHMALLOW)
    ids = [c for t in r.turns for c in t.call_ids]
    assert len(ids) == len(set(ids)) == 11
    assert r.meta["reminted_call_ids"] == 5
    assert any("~" in c for c in ids)


def test_text_actions_become_calls_answered_by_the_next_observation() -> None:
    r = convert_swe_agent(TEXT_ACTIONS)
    assert r.tool_names == (ACTION_TOOL,)
    first = r.turns[0].function_calls[0]
    history = json.loads(TEXT_ACTIONS.read_text(encoding="utf-8"))["history"]
    action = next(m["action"] for m in history if m["role"] == "assistant")
    assert json.loads(first.arguments) == {"action": action}
    assert r.turns[1].answered_call_ids == (first.call_id,)


def test_bad_trajectories_name_the_field(tmp_path: Path) -> None:
    doc: dict[str, Any] = json.loads(FC_SIMPLE.read_text(encoding="utf-8"))
    doc["history"][3]["tool_call_ids"] = "not a list ["
    path = tmp_path / "bad.traj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TraceFormatError) as info:
        convert_swe_agent(path)
    assert info.value.field == "history[3].tool_call_ids"
    del doc["history"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"history: .*\(missing\)"):
        convert_swe_agent(path)
