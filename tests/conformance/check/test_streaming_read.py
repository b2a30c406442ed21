"""`wsmode check` reads JSONL and SSE record by record, with a size limit per record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.conformance.check.offline_check import check_file
from harness.conformance.check.recorded_streams import UnreadableInput
from harness.conformance.check.streaming_read import ReadLimits, streamable_form
from harness.transport.sse_wire import encode_events
from tests.protocol.conftest import full_stream


def _responses(count: int) -> list[dict[str, object]]:
    return [e for n in range(count) for e in full_stream(f"resp_{n}")]


@pytest.mark.parametrize("form", ["jsonl", "sse"])
def test_a_streamed_file_judges_every_response_in_order(tmp_path: Path, form: str) -> None:
    events = _responses(300)
    broken = [e for e in full_stream("resp_bad") if e["type"] != "response.in_progress"]
    events[21 * 150 : 21 * 150] = broken  # the 151st response is broken
    path = tmp_path / f"capture.{form}"
    if form == "jsonl":
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
    else:
        path.write_bytes(encode_events(events))
    assert streamable_form(path, ReadLimits()) == form
    report = check_file(path)
    assert [r.index for r in report.responses] == list(range(1, 302))
    assert [r.response_id for r in report.responses][149:152] == [
        "resp_149",
        "resp_bad",
        "resp_150",
    ]
    assert [r.verdict for r in report.responses].count("FAIL") == 1
    assert report.responses[150].verdict == "FAIL"


def test_a_stray_after_a_terminal_is_still_its_responses_finding(tmp_path: Path) -> None:
    events = full_stream("resp_a")
    stray = dict(events[-2], sequence_number=99)
    path = tmp_path / "stray.jsonl"
    lines = [*events, stray, *full_stream("resp_b")]
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    first, stray_opened, last = check_file(path).responses  # as when read whole
    assert "lifecycle.after_terminal" in {f.rule_id for f in first.findings}
    assert stray_opened.verdict == "FAIL" and last.verdict == "PASS"


def test_an_sse_event_past_the_record_limit_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "no-blank-line.sse"
    path.write_bytes(b"data: " + b"x" * (3 * 1024 * 1024))
    assert main(["check", "--max-record-mib", "1", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "an SSE event larger than 1 MiB (the per-record limit" in err and "\n" not in err


def test_a_jsonl_line_past_the_record_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    event = dict(full_stream()[0], padding="x" * 2048)
    path.write_text(json.dumps(full_stream()[0]) + "\n" + json.dumps(event) + "\n")
    with pytest.raises(UnreadableInput, match=r"long\.jsonl:2: a JSONL line larger than"):
        check_file(path, ReadLimits(max_record_bytes=2048))


def test_a_document_read_whole_past_its_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps(full_stream()))  # a JSON array: read whole
    assert streamable_form(path, ReadLimits()) is None
    assert len(check_file(path).responses) == 1
    with pytest.raises(UnreadableInput, match="in a form read whole"):
        check_file(path, ReadLimits(max_document_bytes=1024))


def test_verdicts_handed_out_as_made_are_counted_not_kept(tmp_path: Path) -> None:
    events = _responses(50)
    events += [e for e in full_stream("resp_bad") if e["type"] != "response.in_progress"]
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    said: list[str] = []
    report = check_file(path, on_verdict=lambda v: said.append(f"{v.index}:{v.verdict}"))
    assert report.responses == []
    assert said == [f"{n}:PASS" for n in range(1, 51)] + ["51:FAIL"]
    assert report.verdicts == {"PASS": 50, "FAIL": 1} and report.must_findings >= 1


def test_the_text_output_prints_each_streamed_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _responses(3)))
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count(": PASS\n") == 3 and "3 responses in 1 files: 3 PASS" in out
