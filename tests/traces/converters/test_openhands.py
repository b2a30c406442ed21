"""OpenHands event streams: actions and observations linked through tool_call_metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.traces.converters.openhands import convert_openhands
from harness.traces.format import TraceFormatError
from tests.recorded import TRACE_SAMPLES, needs

SAMPLES = TRACE_SAMPLES
pytestmark = needs(TRACE_SAMPLES)
BASIC = SAMPLES / "openhands-basic.json"
RENAME = SAMPLES / "openhands-wrong_initial_state.json"
CHAT = SAMPLES / "openhands-basic_interactions.json"


@pytest.mark.parametrize(
    ("path", "turns", "calls", "linked"),
    [(BASIC, 2, 2, 1), (RENAME, 4, 4, 3), (CHAT, 3, 1, 0)],
)
def test_real_event_streams_convert_with_their_counts(
    path: Path, turns: int, calls: int, linked: int
) -> None:
    r = convert_openhands(path)
    assert r.source == "openhands"
    assert len(r.turns) == turns
    assert sum(len(t.function_calls) for t in r.turns) == calls
    assert sum(len(t.answered_call_ids) for t in r.turns) == linked


def test_usage_and_tool_time_come_from_the_events() -> None:
    r = convert_openhands(RENAME)
    events = json.loads(RENAME.read_text(encoding="utf-8"))
    assert r.model == "claude-3-5-sonnet-20241022"
    usage = events[1]["tool_call_metadata"]["model_response"]["usage"]
    assert r.turns[0].observed["input_tokens"] == usage["prompt_tokens"]
    assert r.turns[0].observed["output_tokens"] == usage["completion_tokens"]
    # the observation's timestamp minus its action's (event 2 answers event 1)
    assert r.turns[1].tool_wait_ms == pytest.approx(35.5, abs=0.1)
    assert r.turns[0].call_ids == ("toolu_01USom24cuiyvAembLhEryrn",)


def test_a_user_conversation_keeps_its_messages() -> None:
    r = convert_openhands(CHAT)
    roles = [i["role"] for t in r.turns for i in t.input if i.get("type") == "message"]
    assert roles == ["user", "user", "user"]
    assert r.turns[0].output[0].text == "1 + 1 equals 2."


def test_bad_events_name_the_json_path(tmp_path: Path) -> None:
    events: list[Any] = json.loads(RENAME.read_text(encoding="utf-8"))
    events[2]["tool_call_metadata"]["tool_call_id"] = None
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(events), encoding="utf-8")
    with pytest.raises(TraceFormatError) as info:
        convert_openhands(path)
    assert info.value.field == "[2].tool_call_metadata.tool_call_id"
    path.write_text(json.dumps({"events": 3}), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="expected a list of OpenHands events"):
        convert_openhands(path)
