"""`wsmode check`: exit codes, forms of input, positions; through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.conformance.check.offline_check import check_file
from harness.transport.sse_wire import encode_events
from tests.protocol.conftest import full_stream
from tests.recorded import PROTOCOL_STREAMS, recorded


def _clean_events() -> list[dict[str, Any]]:
    return full_stream()


def test_clean_jsonl_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "clean.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _clean_events()))
    assert main(["check", str(path)]) == 0
    assert ": PASS" in capsys.readouterr().out


def test_broken_stream_exits_1_and_names_rule_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _clean_events()
    events[-1]["response"]["status"] = "in_progress"
    path = tmp_path / "broken.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["check", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    (finding,) = report["files"][0]["responses"][0]["findings"]
    assert (finding["rule_id"], finding["level"]) == ("response.status_terminal", "MUST")
    assert finding["line"] == len(events)


def test_sse_text_with_done_sentinel_is_read(tmp_path: Path) -> None:
    path = tmp_path / "body.sse"
    path.write_bytes(encode_events(_clean_events()) + b"data: [DONE]\n\n")
    assert main(["check", str(path)]) == 0


def test_garbage_exits_2_with_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_text(json.dumps(_clean_events()[0]) + "\n{not json\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"wsmode check: {path}:2: not a JSON object") and "\n" not in err


def test_text_that_is_no_stream_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n")
    assert main(["check", str(path)]) == 2
    assert "no Responses events" in capsys.readouterr().err


def test_several_responses_in_one_file_are_split(tmp_path: Path) -> None:

    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _clean_events() * 2))
    assert [r.verdict for r in check_file(path).responses] == ["PASS", "PASS"]


def test_wire_log_entries_are_read_per_connection(tmp_path: Path) -> None:

    entries = [{"t_ms": 0, "conn": "ws", "dir": "send", "kind": "text", "bytes": 2, "data": "{}"}]
    for event in _clean_events():
        data = json.dumps(event)
        entries.append(
            {"t_ms": 1, "conn": "ws", "dir": "recv", "kind": "text", "bytes": 1, "data": data}
        )
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"cases": [{"id": "c1", "wire_log": entries}]}))
    (response,) = check_file(path).responses
    assert (response.stream, response.verdict) == ("case c1 conn ws", "PASS")


def test_recorded_cassette_is_read() -> None:
    path = recorded(PROTOCOL_STREAMS / "llm-openai-plugin" / "test_tools.yaml")
    assert main(["check", str(path)]) == 0


def test_a_vcr_cassette_is_read_on_a_plain_install(tmp_path: Path) -> None:
    # PyYAML is a dependency of `wsmode check`: a cassette of our own, so this never skips
    body = encode_events(_clean_events()).decode()
    cassette = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": "https://api.openai.com/v1/responses"},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["text/event-stream"]},
                    "body": {"string": body},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump(cassette))
    (response,) = check_file(path).responses
    assert response.verdict == "PASS"


def test_a_trace_file_is_told_apart_from_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps({"kind": "rollout", "format": "wsmode-trace", "version": 1}) + "\n")
    assert main(["check", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "trace.jsonl:1" in err and "wsmode record --events" in err


def test_a_directory_stands_for_the_recorded_files_below_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "captures" / "ws").mkdir(parents=True)
    lines = "".join(json.dumps(e) + "\n" for e in _clean_events())
    (tmp_path / "captures" / "a.jsonl").write_text(lines)
    (tmp_path / "captures" / "ws" / "b.jsonl").write_text(lines)
    (tmp_path / "captures" / "README.md").write_text("not traffic\n")
    assert main(["check", str(tmp_path / "captures")]) == 0
    assert capsys.readouterr().out.count(": PASS") == 2
    (tmp_path / "empty").mkdir()
    assert main(["check", str(tmp_path / "empty")]) == 2
    assert "no recorded files" in capsys.readouterr().err


# The embedded reference server at 1000 tok/s (one delta per token), so delta runs are collapsed.
STREAMING_PROFILE = """
name = "streaming"
model = "wsmode-reference"
[target]
ws_url = "embedded"
http_url = "embedded"
api_key = "sk-wsmode-reference"
[capabilities]
store = true
[embedded]
server_profile = "spark-1000tps"
"""


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """One real certify run (full wire logs) of the reference server, clean and with a fault
    that breaks a rule most of these cases do not judge (their wire logs get compacted)."""
    from tests.conformance.conftest import run_suites

    root = tmp_path_factory.mktemp("certify")
    profile = root / "streaming.toml"  # the reference server decoding token by token
    profile.write_text(STREAMING_PROFILE)
    run = run_suites(
        root,
        "--wsmode-target", "embedded", "--wsmode-target", "embedded:done-text-mismatch",
        "--wsmode-target-profile", str(profile), "--wsmode-full-wire-log",
        "-k", "test_text_grammar or test_queue_mid_stream or test_chain or test_sse_text",
    )  # fmt: skip
    assert run.returncode == 1, run.output  # the fault's own case fails
    assert len(run.reports) == 2
    return run.reports


def _verdicts(path: Path) -> dict[tuple[str, int], tuple[str, list[str]]]:
    report = check_file(path)
    return {
        (r.stream, r.index): (r.verdict, sorted(f.rule_id for f in r.findings))
        for r in report.responses
    }


def test_check_reads_certify_reports_and_compact_logs_judge_as_full_ones(
    certified: list[dict[str, Any]], tmp_path: Path
) -> None:
    from harness.conformance.certificates.wirelog_compact import wire_log_for

    for number, result in enumerate(certified):
        full = tmp_path / f"full{number}.json"
        full.write_text(json.dumps(result))  # the report.json certify wrote (--full-wire-log)
        compact_result = json.loads(json.dumps(result))
        for case in compact_result["certify"]["cases"]:
            case["wire_log"] = wire_log_for(case["wire_log"], case["verdict"], full=False)
        compact = tmp_path / f"compact{number}.json"
        compact.write_text(json.dumps(compact_result))  # what certify writes by default
        assert compact.stat().st_size < full.stat().st_size
        assert any(
            e["kind"] == "deltas" for c in compact_result["certify"]["cases"] for e in c["wire_log"]
        ), "the default log collapses delta runs"
        judged = _verdicts(full)
        assert judged, "every case's connections are judged"
        assert _verdicts(compact) == judged, "the compact log gives the full log's verdicts"
    faulty = _verdicts(tmp_path / "compact1.json")
    assert any("text.done_matches_deltas" in rules for _, rules in faulty.values())
    clean = _verdicts(tmp_path / "compact0.json")
    assert {verdict for verdict, _ in clean.values()} == {"PASS"}


def test_an_abridged_wire_log_is_refused_per_connection_with_a_note(tmp_path: Path) -> None:
    rows = [
        {"t_ms": 0, "conn": "ws1", "dir": "recv", "kind": "text", "bytes": 1, "data": "{}"},
        {"t_ms": 1, "conn": "ws1", "dir": "meta", "kind": "elided", "bytes": 0, "data": "5 rows"},
    ]
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"certify": {"cases": [{"id": "c1", "wire_log": rows}]}}))
    report = check_file(path)
    assert report.responses == []
    assert any("not judged: rows elided" in note for note in report.notes), report.notes


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("deep.json", "[" * 200_000 + "]" * 200_000, "nesting deeper than 200 levels"),
        ("deep.jsonl", '{"a":' * 10_000 + "1" + "}" * 10_000 + "\n", "nesting deeper"),
        ("deep.yaml", "interactions:\n  - " + "[" * 50_000 + "]" * 50_000 + "\n", "deeper than"),
        ("deep.sse", "data: " + "[" * 5_000 + "]" * 5_000 + "\n\n", "nesting deeper"),
    ],
)
def test_deep_nesting_exits_2_with_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"wsmode check: {path}") and says in err and "\n" not in err


def _folder(tmp_path: Path, *, broken: bool, unreadable: bool) -> Path:
    folder = tmp_path / "recordings"
    folder.mkdir()
    clean = _clean_events()
    (folder / "a-clean.jsonl").write_text("".join(json.dumps(e) + "\n" for e in clean))
    if broken:
        bad = [e for e in clean if e["type"] != "response.in_progress"]
        (folder / "b-broken.jsonl").write_text("".join(json.dumps(e) + "\n" for e in bad))
    if unreadable:
        (folder / "c-garbage.jsonl").write_text("{not json\n")
    return folder


@pytest.mark.parametrize(
    ("broken", "unreadable", "status"),
    [(False, False, 0), (True, False, 1), (False, True, 3), (True, True, 4)],
)
def test_a_folders_exit_status_tells_fail_from_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: bool, unreadable: bool, status: int
) -> None:
    folder = _folder(tmp_path, broken=broken, unreadable=unreadable)
    assert main(["check", str(folder)]) == status
    out = capsys.readouterr().out
    assert f"file {folder / 'a-clean.jsonl'}: read, 1 responses: 1 PASS" in out
    if unreadable:
        assert f"file {folder / 'c-garbage.jsonl'}: unreadable: " in out
        assert "1 files unreadable" in out
    if broken:
        assert f"file {folder / 'b-broken.jsonl'}: read, 1 responses: 1 FAIL" in out


def test_strict_makes_an_unreadable_file_fatal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path, broken=False, unreadable=True)
    assert main(["check", "--strict", str(folder)]) == 2
    capsys.readouterr()
    assert main(["check", "--json", str(folder)]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["exit_status"] == 3 and len(document["unreadable"]) == 1
