"""Trace format version 2: multi-agent rollouts whose calls are answered in flight by injects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.format import (
    TraceFormatError,
    dumps_rollouts,
    load_traces,
    loads_rollouts,
    trace_schema,
)
from harness.traces.synthetic.multi_agent import to_multi_agent
from tests.traces.format.test_format import _errors

TRACES = Path(__file__).resolve().parents[3] / "traces"


def smoke_multi_agent() -> list[Any]:
    return [to_multi_agent(r) for r in load_traces(TRACES / "smoke.jsonl")]


def test_a_multi_agent_rollout_is_version_2_and_round_trips() -> None:
    original = load_traces(TRACES / "smoke.jsonl")[0]
    rollout = to_multi_agent(original, max_concurrent_subagents=2)
    assert original.version == 1 and rollout.version == 2
    assert rollout.multi_agent == {"enabled": True, "max_concurrent_subagents": 2}
    (turn,) = rollout.turns  # one user request: one response
    assert turn.injected_call_ids == tuple(c for t in original.turns for c in t.call_ids)
    # calls that follow each other without a word in between now run side by side
    assert 0 < rollout.total_tool_wait_ms <= original.total_tool_wait_ms
    agents = [o.agent for o in turn.output if o.type == "function_call"]
    assert set(agents) == {"root", "worker-1"}
    assert all(o.agent == "root" for o in turn.output if o.type != "function_call")
    assert loads_rollouts(dumps_rollouts([rollout])) == [rollout]
    # the history lists each run's injected outputs right after the run (where the server does)
    history = turn.history_outputs()
    first_answer = next(
        i for i, item in enumerate(history) if item["type"] == "function_call_output"
    )
    assert history[first_answer - 1]["type"] == "function_call"


def test_the_committed_file_is_the_converted_smoke_set_and_v1_files_stay_v1() -> None:
    assert load_traces(TRACES / "multi_agent.jsonl") == smoke_multi_agent()
    smoke_header = json.loads((TRACES / "smoke.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert smoke_header["version"] == 1 and "multi_agent" not in smoke_header


def test_the_schema_accepts_version_2_lines() -> None:
    schema = trace_schema()
    for line in dumps_rollouts(smoke_multi_agent()).splitlines():
        obj = json.loads(line)
        assert _errors(schema, obj, schema) == [], obj


def lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in dumps_rollouts(smoke_multi_agent()[:1]).splitlines()]


def load(objs: list[dict[str, Any]]) -> None:
    loads_rollouts("".join(json.dumps(o) + "\n" for o in objs), "x.jsonl")


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda ls: ls[0].update(version=1), "rollout.multi_agent", "needs trace format version 2"),
        (
            lambda ls: ls[0]["multi_agent"].update(enabled=False),
            "rollout.multi_agent.enabled",
            "expected true",
        ),
        (lambda ls: ls[0].pop("multi_agent"), "turn.injects", "need a multi-agent rollout"),
        (
            lambda ls: ls[1]["injects"].pop(),
            "turn.injects",
            "have no function_call_output in its injects",
        ),
        (
            lambda ls: ls[1]["injects"].reverse(),
            "turn.injects[0].input[0].call_id",
            "not in the run the response waits after",
        ),
        (
            lambda ls: ls[1]["injects"][0]["input"][0].update(call_id="call_zz"),
            "turn.injects[0].input[0].call_id",
            "answers no call this turn emitted",
        ),
        (
            lambda ls: ls[1]["injects"][0]["input"][0].update(type="message"),
            "turn.injects[0].input[0]",
            "a function_call_output item",
        ),
        (
            lambda ls: ls[1]["output"][0].update(agent=""),
            "turn.output[0].agent",
            "a non-empty string",
        ),
    ],
)
def test_broken_multi_agent_lines_are_refused_with_their_field(
    mutate: Any, field: str, reason: str
) -> None:
    objs = lines()
    mutate(objs)
    with pytest.raises(TraceFormatError) as caught:
        load(objs)
    assert caught.value.field == field and reason in caught.value.reason, str(caught.value)


def test_a_later_turn_may_not_answer_a_call_already_answered_in_flight() -> None:
    objs = lines()
    call = objs[1]["injects"][0]["input"][0]
    objs.append(
        {
            "kind": "turn",
            "rollout": objs[0]["id"],
            "index": 1,
            "input": [call],
            "output": [{"type": "message", "text": "ok"}],
        }
    )
    with pytest.raises(TraceFormatError) as caught:
        load(objs)
    assert "answered in flight by turn 0's injects" in caught.value.reason
