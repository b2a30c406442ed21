"""Codex CLI sessions: real (sanitised) rollout files, recorded task timings, input errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters.codex import convert_codex
from harness.traces.format import TraceFormatError
from tests.recorded import RECORDED, needs

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
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
