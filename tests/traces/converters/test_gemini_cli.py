"""Gemini CLI sessions: a hand-written session in the CLI's documented format (no licensed real
session was reachable, see samples/README.md beside this file), its mapping and input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.traces.converters.gemini_cli import convert_gemini_cli
from harness.traces.format import TraceFormatError

SAMPLE = (
    Path(__file__).resolve().parent
    / "samples"
    / "gemini-cli"
    / "handwritten"
    / "session-2026-03-02T10-00-handwritten.json"
)


def test_turns_calls_results_thoughts_and_tokens_are_mapped() -> None:
    r = convert_gemini_cli(SAMPLE)
    assert (r.source, r.model, len(r.turns)) == ("gemini-cli", "gemini-2.5-pro", 3)
    first, second, third = r.turns
    assert [o.type for o in first.output] == ["reasoning", "function_call"]
    assert first.output[0].tokens == 30  # the recorded thoughts are the reasoning's hidden tokens
    assert first.observed["output_tokens"] == 42 and first.observed["reasoning_tokens"] == 30
    assert second.answered_call_ids == ("read_file-1",)
    assert second.input[0]["output"] == "MAX_RETRIES = 5\nBACKOFF_S = 0.5\n"
    assert second.tool_wait_ms == 400.0 and second.observed["cached_tokens"] == 8100
    assert third.observed["user_wait_ms"] == 11500.0
    assert r.meta["skipped_messages"] == {"info": 1}


def test_a_truncated_session_names_the_file_and_line(tmp_path: Path) -> None:
    cut = tmp_path / "session-cut.json"
    text = SAMPLE.read_text()
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(TraceFormatError) as err:
        convert_gemini_cli(cut)
    assert err.value.path == str(cut) and err.value.line is not None
    assert "invalid JSON" in err.value.reason


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"type": "robot"}, "messages[1].type"),
        ({"type": "gemini", "toolCalls": [{"name": "x"}]}, "messages[1].toolCalls[0].id"),
        ({"type": "gemini", "content": 7}, "messages[1].content"),
    ],
)
def test_bad_messages_name_file_and_field(
    tmp_path: Path, message: dict[str, object], field: str
) -> None:
    path = tmp_path / "session-bad.json"
    user = {"type": "user", "content": "hi"}
    path.write_text(json.dumps({"sessionId": "s", "messages": [user, message]}))
    with pytest.raises(TraceFormatError) as err:
        convert_gemini_cli(path)
    assert (err.value.path, err.value.field) == (str(path), field)
