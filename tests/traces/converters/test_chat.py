"""The chat converter: the hand-written trajectory's documented turns, its input forms and input
errors, and real chat-format histories (SWE-agent's `history` is an OpenAI chat with SWE-agent's
extra keys, so the generic converter reads it as it is)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters import ABORTED_OUTPUT, convert_chat
from harness.traces.format import TraceFormatError, dumps_rollouts, loads_rollouts
from tests.recorded import TRACE_SAMPLES, needs

REAL = TRACE_SAMPLES
CHAT = Path(__file__).resolve().parent / "samples" / "chat-trajectory.json"


def write(path: Path, items: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return path


def chat_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(CHAT.read_text(encoding="utf-8"))
    return doc


@needs(TRACE_SAMPLES)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("swe-agent-function_calling_simple.traj", (5, 5, 4)),
        ("swe-agent-6e44b9__sweagenttestrepo-1c2844.traj", (4, 4, 3)),
    ],
)
def test_real_chat_histories_convert_with_calls_linked(
    name: str, expected: tuple[int, int, int]
) -> None:
    r = convert_chat(REAL / name)
    turns = len(r.turns)
    calls = sum(len(t.function_calls) for t in r.turns)
    linked = sum(len(t.answered_call_ids) for t in r.turns)
    assert (turns, calls, linked) == expected
    assert r.source == "chat-export" and r.instructions
    for prev, turn in zip(r.turns, r.turns[1:], strict=False):
        assert turn.answered_call_ids == prev.call_ids


def test_chat_sample_converts_to_the_documented_turns() -> None:
    r = convert_chat(CHAT)
    assert (r.id, r.source, r.model) == ("swe-sample-0001", "chat-export", "gpt-4.1")
    assert r.instructions is not None and r.instructions.startswith("You are a software")
    assert r.tool_names == ("bash", "str_replace_editor")
    assert r.tools[1]["parameters"]["required"] == ["command", "path"]
    assert len(r.turns) == 6
    t0, t1, t2, t3, t4, t5 = r.turns
    assert t0.input[0]["content"] == [
        {"type": "input_text", "text": t0.input[0]["content"][0]["text"]}
    ]
    assert "<issue>" in t0.input[0]["content"][0]["text"]
    assert [o.type for o in t0.output] == ["message", "function_call", "function_call"]
    assert t0.call_ids == ("toolu_01", "toolu_02")
    assert t1.answered_call_ids == ("toolu_01", "toolu_02")
    assert t1.input[1]["output"] == "test_durations.py\ntest_units.py"
    assert [o.type for o in t1.output] == ["function_call"]  # content: null -> no message
    assert [o.type for o in t2.output] == ["reasoning", "function_call"]
    assert t2.output[0].summary.startswith("The regex requires")
    assert json.loads(t2.output[1].arguments)["command"] == "str_replace"  # decoded arguments
    assert t3.output[0].text.startswith("Fixed:")
    assert t4.input[0]["role"] == "user" and t4.call_ids == ("toolu_05",)
    assert t5.output[0].text == "All 14 tests pass."
    assert all(t.tool_wait_ms == 0 for t in r.turns)
    assert loads_rollouts(dumps_rollouts([r])) == [r]


def test_chat_accepts_plain_lists_jsonl_and_history(tmp_path: Path) -> None:
    doc = chat_doc()
    from_list = convert_chat(doc["messages"], rollout_id="l", model="m", agent_kind="test_fix")
    assert (from_list.id, from_list.model, from_list.agent_kind) == ("l", "m", "test_fix")
    # without declared tools, tools are inferred from the calls
    assert from_list.tool_names == ("bash", "str_replace_editor")
    assert from_list.tools[0]["parameters"] == {"type": "object"}
    jsonl = write(tmp_path / "t.jsonl", doc["messages"])
    from_jsonl = convert_chat(jsonl, rollout_id="l", model="m", agent_kind="test_fix")
    assert from_jsonl.turns == from_list.turns
    history = {"history": doc["messages"], "tools": doc["tools"]}
    assert convert_chat(history).turns == from_list.turns
    anonymous = convert_chat(doc["messages"])
    assert anonymous.id.startswith("chat-") and anonymous.id == convert_chat(doc["messages"]).id


def test_chat_unanswered_calls_are_aborted_and_ids_synthesized() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": "ok"},
    ]
    r = convert_chat(messages)
    assert r.turns[0].call_ids == ("call_0001",)
    assert r.turns[1].input[0] == {
        "type": "function_call_output",
        "call_id": "call_0001",
        "output": ABORTED_OUTPUT,
    }
    assert r.meta["synthesized_outputs"] == 1


def _chat_bad(path: list[Any], value: Any) -> Any:
    def mutate(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return mutate


CHAT_BAD = [
    ("role", ["messages", 3, "role"], "function", "messages[3].role", "unsupported role"),
    ("tool_call_id", ["messages", 3, "tool_call_id"], None, "messages[3].tool_call_id",
     "expected a tool_call_id"),
    ("stray tool", ["messages", 3, "tool_call_id"], "toolu_99", "messages[3].call_id",
     'call_id "toolu_99" answers no function call'),
    ("call name", ["messages", 2, "tool_calls", 0, "function", "name"], "",
     "messages[2].tool_calls[0].function.name", "expected a non-empty string"),
    ("content", ["messages", 1, "content"], 42, "messages[1].content",
     "expected a string or a list of parts"),
    ("part", ["messages", 1, "content", 0], {"type": "audio"}, "messages[1].content[0]",
     "unsupported content part"),
    ("message", ["messages", 1], "hello", "messages[1]", "expected a message object"),
    ("messages", ["messages"], {"a": 1}, "messages", "expected a list of chat messages"),
    ("tools", ["tools"], [{"type": "function"}], "tools[0]", "expected a function tool"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"), [c[1:] for c in CHAT_BAD], ids=[c[0] for c in CHAT_BAD]
)
def test_chat_bad_input_names_the_location(
    tmp_path: Path, path: list[Any], value: Any, field: str, reason: str
) -> None:
    doc = copy.deepcopy(chat_doc())
    _chat_bad(path, value)(doc)
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(TraceFormatError) as info:
        convert_chat(file)
    err = info.value
    assert (err.path, err.field) == (str(file), field)
    assert reason in err.reason
    assert str(err).startswith(f"{file}: {field}: ")


def test_chat_jsonl_errors_carry_line_numbers(tmp_path: Path) -> None:
    messages: list[Any] = chat_doc()["messages"]
    messages[4] = {"role": "tool", "content": "x"}
    path = write(tmp_path / "t.jsonl", messages)
    with pytest.raises(TraceFormatError) as info:
        convert_chat(path)
    assert (info.value.line, info.value.field) == (5, "message.tool_call_id")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(TraceFormatError, match="invalid JSON"):
        convert_chat(tmp_path / "broken.json")
    with pytest.raises(TraceFormatError, match="no assistant message"):
        convert_chat([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
