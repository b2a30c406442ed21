"""tau-bench results: one rollout per {task_id, reward, info, traj, trial}; aider refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters import convert_chat, convert_tau_bench
from harness.traces.converters.sources import convert_inputs
from harness.traces.format import TraceFormatError
from tests.recorded import RECORDED, recorded


def _entry(task_id: int, trial: int) -> dict[str, Any]:
    call = {"id": f"call_{task_id}", "type": "function"}
    call["function"] = {"name": "find_user", "arguments": '{"email": "a@b.c"}'}
    traj = [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Change my flight."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{task_id}", "name": "find_user", "content": "u1"},
        {"role": "assistant", "content": "Done."},
    ]
    return {"task_id": task_id, "reward": 1.0, "info": {"task": {}}, "traj": traj, "trial": trial}


def test_each_result_is_a_rollout_with_its_task_trial_and_reward(tmp_path: Path) -> None:
    path = tmp_path / "tool-calling-gpt-4o-0.0_range_0-2.json"
    path.write_text(json.dumps([_entry(0, 0), _entry(1, 0)]))
    rollouts = convert_tau_bench(path)
    assert [r.id for r in rollouts] == [
        f"tau-{path.stem}-task0-trial0",
        f"tau-{path.stem}-task1-trial0",
    ]
    first = rollouts[0]
    assert first.instructions == "You are an airline agent." and len(first.turns) == 2
    assert (first.meta["task_id"], first.meta["trial"], first.meta["reward"]) == (0, 0, 1.0)
    assert first.turns[1].input[0]["type"] == "function_call_output"


def test_tau_bench_given_as_chat_is_pointed_to_its_converter(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps([_entry(0, 0)]))
    with pytest.raises(TraceFormatError, match="use --from tau-bench"):
        convert_chat(path)


def test_aider_chat_history_is_refused_by_name() -> None:
    path = recorded(RECORDED / "set3" / "traces" / "aider" / "tests__fixtures__chat-history.md")
    with pytest.raises(TraceFormatError, match=r"aider's chat history .* is not supported"):
        convert_inputs("chat", [path])
