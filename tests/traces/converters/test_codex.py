"""Codex CLI sessions: the hand-written sample's documented turns, real (sanitised) rollout files,
recorded task timings, input errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters import ABORTED_OUTPUT, convert_codex, iter_codex_sessions
from harness.traces.format import TraceFormatError, dumps_rollouts, loads_rollouts, validate_rollout
from tests.recorded import RECORDED, needs

SAMPLES = Path(__file__).resolve().parent / "samples"
REAL = SAMPLES / "codex-desktop"  # real Codex Desktop sessions, committed (see the README)
SHORT = REAL / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
TOOLS = REAL / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
EVENTS = REAL / "handwritten" / "rollout-2026-05-04T08-35-44-handwritten-event-only.jsonl"
EXEC = RECORDED / "traces-set1" / "codex-rollout" / "kvsankar-real-session-01.jsonl"
HAND = SAMPLES / "codex-rollout.jsonl"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def write(path: Path, items: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return path


def codex_lines() -> list[dict[str, Any]]:
    """The hand-written sample's lines, a fresh copy for each test to change."""
    return lines(HAND)


@pytest.mark.parametrize(("path", "turns", "calls", "linked"), [(SHORT, 1, 1, 0), (TOOLS, 6, 5, 5)])
def test_real_sessions_convert_with_their_counts(
    path: Path, turns: int, calls: int, linked: int
) -> None:
    r = convert_codex(path)
    assert r.source == "codex" and r.meta["cli_version"]
    assert len(r.turns) == turns
    assert sum(len(t.function_calls) for t in r.turns) == calls
    assert sum(len(t.answered_call_ids) for t in r.turns) == linked
    assert all("_reasoning_tokens" not in t.observed for t in r.turns)


def test_real_token_counts_are_kept_per_request() -> None:
    r = convert_codex(TOOLS)
    usage = [
        x["payload"]["info"]["last_token_usage"]
        for x in lines(TOOLS)
        if x["type"] == "event_msg"
        and x["payload"].get("type") == "token_count"
        and x["payload"].get("info")
    ]
    assert r.turns[0].observed["input_tokens"] == usage[0]["input_tokens"]
    assert r.turns[-1].observed["output_tokens"] == usage[-1]["output_tokens"]


def test_codex_desktop_user_turns_written_only_as_events_become_inputs() -> None:
    """Codex Desktop 0.128 writes the user's turn as an event_msg user_message and no response
    item: each opens its turn (a response item would be the duplicate, and is not doubled)."""
    r = convert_codex(EVENTS)
    assert r.meta["originator"] == "Codex Desktop" and r.meta["user_turns_from_events"] == 2
    assert [len(t.input) for t in r.turns] == [1, 1, 1]
    assert r.turns[0].input[0]["content"][0]["text"] == "Run the tests and tell me what fails."
    assert r.turns[2].input[0]["content"][0]["text"] == "Why does it fail?"
    assert r.turns[2].observed["user_wait_ms"] == 25801.0 and r.turns[0].observed["ttft_ms"] == 2308
    # files that also carry the response item keep one copy of the user's message
    assert convert_codex(TOOLS).meta.get("user_turns_from_events") is None


def test_an_event_and_its_repeating_response_item_make_one_input(tmp_path: Path) -> None:
    items = lines(EVENTS)
    event = next(i for i, x in enumerate(items) if x["payload"].get("type") == "user_message")
    repeat = {
        "timestamp": items[event]["timestamp"],
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": items[event]["payload"]["message"]}],
        },
    }
    r = convert_codex(
        write(tmp_path / "rollout-x.jsonl", [*items[: event + 1], repeat, *items[event + 1 :]])
    )
    assert [len(t.input) for t in r.turns] == [1, 1, 1]


@needs(EXEC)
def test_a_newer_codex_exec_rollout_keeps_its_recorded_task_timings() -> None:
    r = convert_codex(EXEC)
    assert (r.meta["cli_version"], len(r.turns)) == ("0.135.0", 1)
    assert (
        r.turns[0].observed["ttft_ms"] == 5828 and r.turns[0].observed["task_duration_ms"] == 6074
    )


def test_a_truncated_desktop_rollout_names_the_file_and_line(tmp_path: Path) -> None:
    text = TOOLS.read_text()
    cut = tmp_path / TOOLS.name
    cut.write_text(text[:9000])
    with pytest.raises(TraceFormatError) as err:
        convert_codex(cut)
    assert (err.value.path, err.value.line) == (str(cut), text[:9000].count("\n") + 1)


def test_task_complete_timings_are_kept_in_observed(tmp_path: Path) -> None:
    items = lines(HAND)
    complete = {"type": "task_complete", "duration_ms": 9120, "time_to_first_token_ms": 412}
    first_user = next(
        i
        for i, x in enumerate(items)
        if x["type"] == "response_item"
        and x["payload"].get("role") == "user"
        and "Fix" in json.dumps(x)
    )
    items.insert(
        first_user,
        {
            "timestamp": items[first_user]["timestamp"],
            "type": "event_msg",
            "payload": {"type": "task_started"},
        },
    )
    last_tool_turn = max(
        i for i, x in enumerate(items) if x["payload"].get("type") == "agent_message"
    )
    items.insert(
        last_tool_turn + 1,
        {"timestamp": items[last_tool_turn]["timestamp"], "type": "event_msg", "payload": complete},
    )
    r = convert_codex(write(tmp_path / "rollout-x.jsonl", items))
    assert r.turns[0].observed["ttft_ms"] == 412.0
    assert r.turns[3].observed["task_duration_ms"] == 9120.0
    assert "task_complete" in r.meta["timing"]


def test_pretty_printed_json_is_not_called_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "rollout-pretty.jsonl"
    path.write_text(json.dumps(lines(HAND)[0], indent=2), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="pretty-printed JSON document, not JSONL"):
        convert_codex(path)


def test_a_missing_key_is_reported_under_its_own_name(tmp_path: Path) -> None:
    items = lines(HAND)
    del items[3]["payload"]
    with pytest.raises(TraceFormatError) as info:
        convert_codex(write(tmp_path / "rollout-x.jsonl", items))
    assert (info.value.line, info.value.field) == (4, "payload")
    assert "(missing)" in info.value.reason
    items = lines(HAND)
    call = next(x for x in items if x["payload"].get("type") == "function_call")
    del call["payload"]["name"]
    with pytest.raises(TraceFormatError) as info:
        convert_codex(write(tmp_path / "rollout-y.jsonl", items))
    assert info.value.field == "payload.name" and "(missing)" in info.value.reason


def test_codex_sample_converts_to_the_documented_turns() -> None:
    r = convert_codex(HAND)
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
    r = convert_codex(HAND)
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
    r = convert_codex(write(tmp_path / "s.jsonl", lines), rollout_id="x", agent_kind="bug_fix")
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
    r = convert_codex(write(tmp_path / "s.jsonl", lines))
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
    r = convert_codex(write(tmp_path / "s.jsonl", lines))
    assert r.meta["compactions"] == 1
    assert r.meta["skipped_items"]["line:future_kind"] == 1


def test_codex_without_timestamps_has_zero_waits(tmp_path: Path) -> None:
    lines = codex_lines()
    for line in lines:
        line.pop("timestamp")
    r = convert_codex(write(tmp_path / "s.jsonl", lines))
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
    path = write(tmp_path / "s.jsonl", codex_lines()[:7])
    with pytest.raises(TraceFormatError, match="no model output found"):
        convert_codex(path)
    with pytest.raises(TraceFormatError, match="cannot read"):
        convert_codex(tmp_path / "missing.jsonl")


def test_iter_codex_sessions_finds_rollout_files(tmp_path: Path) -> None:
    day = tmp_path / "2025" / "10" / "21"
    day.mkdir(parents=True)
    for name in ("rollout-2025-10-21T09-14-02-b.jsonl", "rollout-2025-10-21T08-00-00-a.jsonl"):
        (day / name).write_text(HAND.read_text())
    (day / "notes.jsonl").write_text("")
    found = list(iter_codex_sessions(tmp_path))
    assert [p.name for p in found] == [
        "rollout-2025-10-21T08-00-00-a.jsonl",
        "rollout-2025-10-21T09-14-02-b.jsonl",
    ]
