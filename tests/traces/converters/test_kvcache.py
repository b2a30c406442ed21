"""kv-cache-tester traces: real captures convert with their counts, timings and sub-agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters.kvcache import convert_kvcache
from harness.traces.format import TraceFormatError, dumps_rollouts, loads_rollouts
from tests.recorded import TRACE_SAMPLES, needs

SAMPLES = TRACE_SAMPLES
pytestmark = needs(TRACE_SAMPLES)


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    return doc


def test_a_real_capture_keeps_counts_and_recorded_timings() -> None:
    (r,) = convert_kvcache(SAMPLES / "kvcache-trace_0022.json")
    raw = load("kvcache-trace_0022.json")["requests"]
    assert (r.id, r.source, r.model) == (
        "kvcache-trace_0022",
        "kvcache",
        "claude-opus-4-5-20251101",
    )
    assert len(r.turns) == len(raw) == 7
    assert [t.observed["input_tokens"] for t in r.turns] == [q["in"] for q in raw]
    assert [t.observed["output_tokens"] for t in r.turns] == [q["out"] for q in raw]
    assert [t.observed["e2e_ms"] for t in r.turns] == [round(q["api_time"] * 1000, 1) for q in raw]
    # a tool result's wait is the recorded think time; calls are linked to their outputs
    for turn, q in zip(r.turns[1:], raw[1:], strict=True):
        if "tool_result" in q["input_types"]:
            assert turn.tool_wait_ms == round(q["think_time"] * 1000, 1)
            assert turn.answered_call_ids == r.turns[turn.index - 1].call_ids
    assert loads_rollouts(dumps_rollouts([r])) == [r]


def test_instructions_hold_the_system_and_tool_tokens() -> None:
    from harness.protocol.tokenizer import count_tokens

    (r,) = convert_kvcache(SAMPLES / "kvcache-trace_0026.json")
    top = load("kvcache-trace_0026.json")
    assert r.instructions is not None
    assert count_tokens(r.instructions) == top["system_tokens"] + top["tool_tokens"]
    assert len(r.turns) == 3 and sum(len(t.function_calls) for t in r.turns) == 1


def test_subagents_are_their_own_rollouts_and_the_parent_waits_as_recorded() -> None:
    rollouts = convert_kvcache(SAMPLES / "kvcache-trace_0291.json")
    raw = load("kvcache-trace_0291.json")["requests"]
    parent, *subs = rollouts
    entries = [q for q in raw if q["type"] == "subagent"]
    assert [len(r.turns) for r in rollouts] == [20, 5, 7]
    assert len(subs) == len(entries) == 2
    for sub, entry in zip(subs, entries, strict=True):
        assert sub.id == f"{parent.id}-{entry['agent_id']}"
        assert sub.meta["parent_rollout"] == parent.id
        assert sub.meta["duration_ms"] == entry["duration_ms"]
        assert sub.meta["start_offset_ms"] == round(entry["t"] * 1000, 1)
        assert sub.model == entry["models"][0]
        after = sub.meta["spawned_after_turn"]
        # the offset a replay waits: from the end (t + api_time) of the request that spawned it
        spawner = [q for q in raw[: raw.index(entry)] if q["type"] != "subagent"][-1]
        end_s = spawner["t"] + spawner["api_time"]
        assert sub.meta["start_after_turn_ms"] == round((entry["t"] - end_s) * 1000, 1)
        # the parent's next request comes after the sub-agent's run
        assert parent.turns[after + 1].tool_wait_ms >= 0.9 * entry["duration_ms"] or (
            parent.turns[after + 1].observed.get("user_wait_ms", 0) >= 0.9 * entry["duration_ms"]
        )


def test_thinking_dropped_from_the_next_prompt_is_hidden_reasoning() -> None:
    (r,) = convert_kvcache(SAMPLES / "kvcache-trace_0022.json")
    raw = load("kvcache-trace_0022.json")["requests"]
    for turn, q, nxt in zip(r.turns, raw, raw[1:], strict=False):
        visible = min(q["out"], nxt["in"] - q["in"])
        hidden = sum(o.tokens for o in turn.output if o.type == "reasoning")
        assert hidden == q["out"] - visible


def write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda d: d.pop("requests"), "requests", "(missing)"),
        (lambda d: d["requests"][1].pop("in"), "requests[1].in", "(missing)"),
        (lambda d: d["requests"][0].update(hash_ids=[1, 2]), "requests[0].hash_ids", "blocks"),
        (lambda d: d["requests"][2].update(think_time="slow"), "requests[2].think_time", "number"),
        (lambda d: d["requests"][0].update(out=-1), "requests[0].out", "integer >= 0"),
    ],
)
def test_bad_captures_name_the_json_path_and_field(
    tmp_path: Path, mutate: Any, field: str, reason: str
) -> None:
    doc = load("kvcache-trace_0026.json")
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(TraceFormatError) as info:
        convert_kvcache(path)
    assert info.value.field == field
    assert reason in info.value.reason
    assert str(path) in str(info.value)
