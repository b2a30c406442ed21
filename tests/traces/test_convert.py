"""Converters from Codex CLI session files and chat-format trajectories."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.convert import ABORTED_OUTPUT, convert_chat, convert_codex, iter_codex_sessions
from harness.traces.format import TraceFormatError, dumps_rollouts, loads_rollouts, validate_rollout

SAMPLES = Path(__file__).parent / "samples"
CODEX = SAMPLES / "codex-rollout.jsonl"
CHAT = SAMPLES / "chat-trajectory.json"


def codex_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CODEX.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def chat_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(CHAT.read_text(encoding="utf-8"))
    return doc


# ---------------------------------------------------------------------------------------------
# Codex


def test_codex_sample_converts_to_the_documented_turns() -> None:
    r = convert_codex(CODEX)
    assert r.id == "codex-0199f2a1-7c3e-7b52-9d1e-4f6a2b8c9d01"
    assert (r.source, r.agent_kind, r.model) == ("codex", "unknown", "gpt-5-codex")
    assert (
        r.instructions == "You are Codex, a coding agent. Keep changes minimal and run the tests."
    )
    assert r.tool_names == ("shell", "apply_patch")
    assert all(t["parameters"] == {"type": "object"} for t in r.tools)
    assert len(r.turns) == 5

    t0, t1, t2, t3, t4 = r.turns
    assert [i["role"] for i in t0.input] == ["developer", "user", "user"]
    assert [o.type for o in t0.output] == ["reasoning", "function_call", "function_call"]
    assert t0.output[0].summary == "**Locating the TTL check**"
    assert t0.output[0].tokens == 64  # hidden reasoning tokens from token_count
    assert t0.call_ids == ("call_Sx1", "call_Sx2")
    assert t0.tool_wait_ms == 0
    assert t0.observed == {
        "input_tokens": 5120,
        "cached_tokens": 0,
        "output_tokens": 96,
        "reasoning_tokens": 64,
        "e2e_ms": 2870.0,
    }

    assert t1.answered_call_ids == ("call_Sx1", "call_Sx2")
    assert t1.tool_wait_ms == 1229.0  # 09:14:06.250 - 09:14:05.021
    assert "kvstash/cache.py:41" in t1.input[0]["output"]
    assert t1.input[1]["output"].startswith("class Cache:")  # content items flattened
    assert [o.type for o in t1.output] == ["message", "function_call"]
    patch = t1.output[1]
    assert (patch.name, patch.call_id) == ("apply_patch", "call_Px3")
    assert json.loads(patch.arguments)["input"].startswith("*** Begin Patch")
    assert t1.observed["cached_tokens"] == 5120

    assert t2.answered_call_ids == ("call_Px3",)  # custom_tool_call_output
    assert t2.tool_wait_ms == 286.0
    assert t2.output[0].type == "reasoning" and t2.output[0].summary == ""
    assert t2.output[0].tokens == 56
    assert t3.tool_wait_ms == 4515.0
    assert t3.output[0].text.startswith("Fixed the inverted TTL check")

    assert t4.input[0]["content"][0]["text"] == "Thanks. Is there a test for this?"
    assert t4.tool_wait_ms == 0
    assert t4.observed["user_wait_ms"] == 41250.0
    assert [o.type for o in t4.output] == ["message"]

    assert r.meta["skipped_items"] == {"ghost_snapshot": 1, "web_search_call": 1}
    assert r.meta["cli_version"] == "0.46.0"
    assert "synthesized_outputs" not in r.meta
    # and the result is a valid trace that survives a round trip
    assert loads_rollouts(dumps_rollouts([r])) == [r]


def test_codex_full_history_matches_what_codex_resends() -> None:
    r = convert_codex(CODEX)
    history = r.full_history(2)
    kinds = [(i.get("type"), i.get("role")) for i in history]
    assert kinds == [
        ("message", "developer"),
        ("message", "user"),
        ("message", "user"),
        ("function_call", None),
        ("function_call", None),
        ("function_call_output", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("function_call", None),
        ("function_call_output", None),
    ]


def test_codex_base_instructions_dynamic_tools_and_overrides(tmp_path: Path) -> None:
    lines = codex_lines()
    meta = lines[0]["payload"]
    del meta["instructions"]
    meta["base_instructions"] = {"text": "Base prompt."}
    meta["dynamic_tools"] = [
        {
            "name": "shell",
            "description": "Run a command.",
            "inputSchema": {"type": "object", "properties": {"command": {"type": "array"}}},
        }
    ]
    r = convert_codex(
        write_jsonl(tmp_path / "s.jsonl", lines), rollout_id="x", agent_kind="bug_fix"
    )
    assert (r.id, r.agent_kind, r.instructions) == ("x", "bug_fix", "Base prompt.")
    assert r.tools[0]["description"] == "Run a command."
    assert r.tools[0]["parameters"]["properties"] == {"command": {"type": "array"}}
    assert r.tool_names == ("shell", "apply_patch")  # apply_patch still inferred


def test_codex_interrupted_calls_get_aborted_outputs_and_trailing_input_is_dropped(
    tmp_path: Path,
) -> None:
    lines = codex_lines()
    # drop the pytest output (line 23): the user cut in, codex never answered call_T4
    del lines[22]
    lines.append(
        {
            "timestamp": "2025-10-21T09:16:00.000Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "unanswered"},
        }
    )
    r = convert_codex(write_jsonl(tmp_path / "s.jsonl", lines))
    t3 = r.turns[3]
    assert t3.input[0] == {
        "type": "function_call_output",
        "call_id": "call_T4",
        "output": ABORTED_OUTPUT,
    }
    assert r.meta["synthesized_outputs"] == 1
    assert r.meta["dropped_trailing_inputs"] == 1
    validate_rollout(r)


def test_codex_compaction_and_unknown_line_types_are_counted(tmp_path: Path) -> None:
    lines = codex_lines()
    lines.insert(26, {"timestamp": "x", "type": "compacted", "payload": {"message": "summary"}})
    lines.insert(1, {"timestamp": "x", "type": "future_kind", "payload": {}})
    r = convert_codex(write_jsonl(tmp_path / "s.jsonl", lines))
    assert r.meta["compactions"] == 1
    assert r.meta["skipped_items"]["line:future_kind"] == 1


def test_codex_without_timestamps_has_zero_waits(tmp_path: Path) -> None:
    lines = codex_lines()
    for line in lines:
        line.pop("timestamp")
    r = convert_codex(write_jsonl(tmp_path / "s.jsonl", lines))
    assert all(t.tool_wait_ms == 0 for t in r.turns)
    assert all("e2e_ms" not in t.observed for t in r.turns)


CODEX_BAD = [
    ("not json", lambda ls: ls.__setitem__(4, "{oops"), 5, None, "invalid JSON"),
    ("not object", lambda ls: ls.__setitem__(4, [1]), 5, None, "expected a JSON object"),
    ("no payload", lambda ls: ls[4].pop("payload"), 5, "payload", "expected an object"),
    ("bad role", lambda ls: ls[4]["payload"].__setitem__("role", "robot"), 5, "payload.role",
     'unknown message role "robot"'),
    ("call without name", lambda ls: ls[8]["payload"].pop("name"), 9, "payload.name",
     "expected a non-empty string"),
    ("stray output", lambda ls: ls[11]["payload"].__setitem__("call_id", "call_nope"), 12,
     "payload.call_id", 'call_id "call_nope" answers no function call'),
    ("output first", lambda ls: ls.__setitem__(1, ls[7]), 2, "payload",
     "model output before any input"),
    ("bad summary", lambda ls: ls[7]["payload"].__setitem__("summary", "text"), 8,
     "payload.summary", "expected a list of summary parts"),
    ("bad content", lambda ls: ls[14]["payload"].__setitem__("content", 5), 15,
     "payload.content", "expected a string or a list of content parts"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "line", "field", "reason"), [c[1:] for c in CODEX_BAD], ids=[c[0] for c in CODEX_BAD]
)
def test_codex_bad_input_names_the_location(
    tmp_path: Path, mutate: Any, line: int, field: str | None, reason: str
) -> None:
    lines: list[Any] = codex_lines()
    mutate(lines)
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    with pytest.raises(TraceFormatError) as info:
        convert_codex(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert reason in err.reason


def test_codex_file_without_model_output_and_missing_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", codex_lines()[:7])
    with pytest.raises(TraceFormatError, match="no model output found"):
        convert_codex(path)
    with pytest.raises(TraceFormatError, match="cannot read"):
        convert_codex(tmp_path / "missing.jsonl")


def test_iter_codex_sessions_finds_rollout_files(tmp_path: Path) -> None:
    day = tmp_path / "2025" / "10" / "21"
    day.mkdir(parents=True)
    for name in ("rollout-2025-10-21T09-14-02-b.jsonl", "rollout-2025-10-21T08-00-00-a.jsonl"):
        (day / name).write_text(CODEX.read_text())
    (day / "notes.jsonl").write_text("")
    found = list(iter_codex_sessions(tmp_path))
    assert [p.name for p in found] == [
        "rollout-2025-10-21T08-00-00-a.jsonl",
        "rollout-2025-10-21T09-14-02-b.jsonl",
    ]


# ---------------------------------------------------------------------------------------------
# Chat


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
    jsonl = write_jsonl(tmp_path / "t.jsonl", doc["messages"])
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
    path = write_jsonl(tmp_path / "t.jsonl", messages)
    with pytest.raises(TraceFormatError) as info:
        convert_chat(path)
    assert (info.value.line, info.value.field) == (5, "message.tool_call_id")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(TraceFormatError, match="invalid JSON"):
        convert_chat(tmp_path / "broken.json")
    with pytest.raises(TraceFormatError, match="no assistant message"):
        convert_chat([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
