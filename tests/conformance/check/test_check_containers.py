"""`wsmode check` reads the HTTP recording containers real recordings come in (README here)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.conformance.check.offline_check import check_file
from tests.recorded import RECORDED, recorded

FORMATS = Path(__file__).parent / "recorded_formats"
RUBY_VCR = FORMATS / "ruby-vcr-ruby-openai-gpt-4o_streamed_responsesapi_responses.yml"
TEST_PROXY = FORMATS / "azure-test-proxy-HelloWorldStreaming(%gpt-4o-mini%).json"
GO_VCR = FORMATS / "go-vcr-envoy-ai-gateway-embeddings-bad-request.yaml"
HAR = FORMATS / "har-mitmproxy-chrome-postdata.har"
MCP_EVENTS = (
    'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\n\n'  # an MCP server
)


def _real_stream() -> str:
    """The SSE body of the real Ruby VCR recording."""
    document = yaml.safe_load(RUBY_VCR.read_text(encoding="utf-8"))
    body: str = document["http_interactions"][0]["response"]["body"]["string"]
    return body


def _only_response(path: Path) -> tuple[str, list[str]]:
    (response,) = check_file(path).responses
    return response.verdict, sorted({f.rule_id for f in response.findings})


def test_a_real_ruby_vcr_cassette_is_judged() -> None:
    verdict, rules = _only_response(RUBY_VCR)
    assert (verdict, rules) == ("NON-STRICT", ["event.legacy_fields"])  # no sequence_number


def test_a_real_test_proxy_record_is_judged_from_its_sse_lines() -> None:
    report = check_file(TEST_PROXY)
    (response,) = report.responses
    assert response.terminal == "response.completed" and response.events == 17
    assert "response.schema" in {f.rule_id for f in response.findings}  # no tool_choice


def test_a_real_go_vcr_cassette_of_other_traffic_is_skipped_and_counted(capsys: Any) -> None:
    assert main(["check", str(GO_VCR)]) == 0
    out = capsys.readouterr().out
    assert "POST https://api.openai.com/v1/embeddings): skipped" in out
    assert "1 interactions skipped" in out


def test_a_real_browser_har_of_other_traffic_is_skipped_and_counted(capsys: Any) -> None:
    assert main(["check", str(HAR)]) == 0
    out = capsys.readouterr().out
    assert "POST https://bi.pst.tech/events): skipped" in out
    assert "1 interactions skipped" in out


def test_go_vcr_and_har_layouts_carry_a_real_stream(tmp_path: Path) -> None:
    stream = _real_stream()
    go_vcr = tmp_path / "go-vcr.yaml"
    go_vcr.write_text(
        "---\nversion: 2\ninteractions:\n"
        + yaml.safe_dump(
            [
                {
                    "id": 0,
                    "request": {"url": "https://api.openai.com/v1/responses", "method": "POST"},
                    "response": {"body": stream, "code": 200, "status": "200 OK"},
                }
            ]
        )
    )
    har = tmp_path / "capture.har"
    entry = {
        "request": {"method": "POST", "url": "https://api.openai.com/v1/responses"},
        "response": {
            "status": 200,
            "content": {
                "mimeType": "text/event-stream",
                "encoding": "base64",
                "text": base64.b64encode(stream.encode()).decode(),
            },
        },
    }
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    for path in (go_vcr, har):
        assert _only_response(path) == ("NON-STRICT", ["event.legacy_fields"]), path


def test_other_traffic_in_a_cassette_is_skipped_and_the_rest_judged(
    tmp_path: Path, capsys: Any
) -> None:
    def interaction(url: str, body: str) -> dict[str, Any]:
        return {"request": {"method": "POST", "uri": url}, "response": {"body": {"string": body}}}

    cassette = {
        "interactions": [
            interaction("http://127.0.0.1:8000/mcp", MCP_EVENTS),
            interaction("https://api.openai.com/v1/responses", _real_stream()),
            interaction("https://api.openai.com/v1/responses", '{"object": "response"}'),
        ]
    }
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(cassette))
    assert main(["check", "--json", str(tmp_path)]) == 0  # not exit 2: the MCP traffic is skipped
    (report,) = json.loads(capsys.readouterr().out)["files"]
    assert report["skipped"] == 2 and len(report["responses"]) == 1
    assert any("JSON-RPC" in note for note in report["notes"]), report["notes"]


OPENAI_DOTNET = RECORDED / "set3" / "streams" / "openai-dotnet"


@pytest.mark.parametrize(
    "name",
    [
        "ResponsesTests__CanStreamBackgroundResponses.json",
        "ResponsesTests__CanStreamBackgroundResponsesAsync.json",
        "ResponsesTests__CanUseStreamingBackgroundResponses.json",
        "ResponsesTests__CanUseStreamingBackgroundResponsesAsync.json",
    ],
)
def test_real_resumed_background_streams_are_judged_from_their_resume_point(name: str) -> None:
    report = check_file(recorded(OPENAI_DOTNET / name))
    first, resumed = report.responses
    assert first.verdict == "PASS"
    assert resumed.terminal == "response.completed"
    assert resumed.response_id == first.response_id
    assert [f.rule_id for f in resumed.findings] == ["seq.resumed"]
    assert resumed.verdict == "INFORMATIONAL"


def test_a_har_with_a_binary_body_is_read_and_that_body_skipped(tmp_path: Path) -> None:
    stream = _real_stream()
    entries = [
        {
            "request": {"method": "GET", "url": "https://x/logo.png"},
            "response": {"content": {"mimeType": "image/png", "text": "\udc89PNG\ud800"}},
        },
        {
            "request": {"method": "POST", "url": "https://api.openai.com/v1/responses"},
            "response": {"content": {"mimeType": "text/event-stream", "text": stream}},
        },
    ]
    path = tmp_path / "binary.har"
    path.write_text(json.dumps({"log": {"entries": entries}}))  # \\udc89 as an escape, as HARs do
    report = check_file(path)
    assert len(report.responses) == 1 and report.skipped == 1
    assert "a binary body" in report.notes[0]


def test_a_dd_apm_test_agent_cassette_is_judged_from_its_body(tmp_path: Path) -> None:
    cassette = {
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/responses",
            "headers": {},
            "body": '{"model":"gpt-4o","stream":true}',
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": "text/event-stream; charset=utf-8"},
            "body": _real_stream(),
        },
    }
    path = tmp_path / "openai_responses_post_1.json"
    path.write_text(json.dumps(cassette))
    (response,) = check_file(path).responses
    assert response.terminal == "response.completed"
    assert _only_response(RUBY_VCR) == (
        response.verdict,
        sorted({f.rule_id for f in response.findings}),
    )


def _fetch_hook_lines(events: list[dict[str, Any]]) -> str:
    """As @effect-native/fetch-hooks records: a payload a network chunk cut is a `text` record
    of its start, then one of the raw rest (blank line included); `[DONE]` is `text` too."""
    lines: list[dict[str, Any]] = [{"comment": ": OPENROUTER PROCESSING\n\n"}, {"delay_ms": 12}]
    for number, event in enumerate(events):
        payload = json.dumps(event)
        if number % 2:
            lines += [{"json": event}, {"delay_ms": 0}]
        else:
            cut = len(payload) // 2
            lines += [{"text": payload[:cut]}, {"delay_ms": 0}, {"text": payload[cut:] + "\n\n"}]
    lines.append({"text": "[DONE]"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_an_openrouter_fetch_hooks_recording_is_judged(tmp_path: Path) -> None:
    from tests.protocol.conftest import full_stream

    path = tmp_path / "fetch-hooks.jsonl"
    events = full_stream()
    path.write_text(_fetch_hook_lines(events))
    (response,) = check_file(path).responses
    assert (response.verdict, response.events) == ("PASS", len(events))
    broken = [e for e in events if e["type"] != "response.output_text.done"]
    path.write_text(_fetch_hook_lines(broken))
    (response,) = check_file(path).responses
    assert response.verdict == "FAIL"


def test_an_unknown_container_is_named_unknown_with_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mystery.json"
    path.write_text(json.dumps({"recordings": [], "version": 3}))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "an unknown container (a JSON object with keys: recordings, version)" in err
    assert "dd-apm-test-agent cassettes" in err and "OpenRouter fetch-hooks JSONL" in err


VCRPY_ISTR = FORMATS / "vcrpy-dd-trace-py-istr-headers-completions-400.yaml"
DD_TEST_AGENT = FORMATS / "dd-apm-test-agent-dd-trace-py-completions-400.json"


@pytest.mark.parametrize("path", [VCRPY_ISTR, DD_TEST_AGENT])
def test_real_python_tagged_and_test_agent_cassettes_are_read(path: Path) -> None:
    report = check_file(path)
    assert report.responses == [] and report.skipped == 1
    assert "(POST https://api.openai.com/v1/completions): skipped" in report.notes[0]


def test_a_ruby_vcr_body_stored_as_binary_is_judged_like_its_text(tmp_path: Path) -> None:
    """The real Ruby VCR cassette with its body as Psych writes an ASCII-8BIT string."""
    text = RUBY_VCR.read_text(encoding="utf-8")
    encoded = base64.b64encode(_real_stream().encode()).decode()
    lines = "".join(f"        {encoded[i : i + 60]}\n" for i in range(0, len(encoded), 60))
    start = text.index("      encoding: UTF-8\n      string: |+", text.index("  response:"))
    end = text.index("  recorded_at:", start)
    binary = (
        text[:start] + "      encoding: ASCII-8BIT\n      string: !binary |-\n" + lines + text[end:]
    )
    assert "!binary" in binary and "event: response.created" not in binary
    path = tmp_path / "binary.yml"
    path.write_text(binary)
    assert _only_response(path) == _only_response(RUBY_VCR)


DD_RESPONSES_STREAM = (
    FORMATS / "dd-apm-test-agent-dd-trace-py-responses-o4-mini-stream-aaef3e68.json"
)
DD_RESPONSES_JSON = (
    FORMATS / "dd-apm-test-agent-dd-trace-py-responses-gpt-4.1-function-output-eae4a165.json"
)


def test_a_real_test_agent_cassette_of_a_responses_stream_passes(capsys: Any) -> None:
    """A streamed o4-mini call with a reasoning summary, as the test agent recorded it."""
    assert main(["check", str(DD_RESPONSES_STREAM)]) == 0
    out = capsys.readouterr().out
    assert "144 events from interaction 1, line 1, response.completed): PASS" in out
    (response,) = check_file(DD_RESPONSES_STREAM).responses
    assert response.findings == [] and response.events == 144


def test_a_real_test_agent_cassette_of_a_plain_response_is_skipped_and_counted() -> None:
    """A non-streamed Responses call: a Response object, no events, so nothing to judge."""
    report = check_file(DD_RESPONSES_JSON)
    assert report.responses == [] and report.skipped == 1
    assert report.notes == [
        "interaction 1 (POST https://api.openai.com/v1/responses): skipped,"
        " not Responses traffic: a Response object, not an event stream"
        " (only streams are judged)"
    ]


RUBY_VCR_BINARY = FORMATS / "ruby-vcr-binary-ruby_llm-bedrock_mantle_responses_streams.yml"


def test_a_real_ruby_vcr_binary_body_is_read_and_its_real_deviations_found() -> None:
    """Bedrock Mantle's stream (gpt-oss-20b), its body as Psych's `!binary` base64.

    The message's only content part arrives as content_index 1 (the reasoning item's part was
    0): the real server's deviation, which check must find, not a reading error.
    """
    assert "string: !binary |-" in RUBY_VCR_BINARY.read_text(encoding="utf-8")
    (response,) = check_file(RUBY_VCR_BINARY).responses
    assert (response.events, response.terminal) == (15, "response.completed")
    assert response.verdict == "FAIL"
    assert sorted({f.rule_id for f in response.findings}) == [
        "event.unknown_type",  # response.reasoning_part.added/.done: not OpenAI events
        "item.done_matches",
        "part.index_order",
        "part.unknown_index",
    ]
    assert next(f for f in response.findings if f.rule_id == "part.index_order").message == (
        "content_index 1, expected 0"
    )


RUBY_VCR_BINARY_OPENAI = FORMATS / "ruby-vcr-binary-activeagent-gpt-4.1-function-call-streaming.yml"


def test_a_real_ruby_vcr_cassette_with_text_and_binary_streams_passes() -> None:
    """api.openai.com: a function call streamed as text, then its answer stored as `!binary`."""
    raw = RUBY_VCR_BINARY_OPENAI.read_text(encoding="utf-8")
    assert raw.count("string: !binary |-") == 1 and "event: response.output_text.done" not in raw
    first, second = check_file(RUBY_VCR_BINARY_OPENAI).responses
    assert [(r.verdict, r.events, r.terminal) for r in (first, second)] == [
        ("PASS", 18, "response.completed"),  # the function_call, read from the text body
        ("PASS", 35, "response.completed"),  # the answer, read from the base64 body
    ]
    assert first.findings == [] and second.findings == []


FETCH_HOOKS = FORMATS / "openrouter-fetch-hooks-ai-sdk-provider-{}.jsonl"


def test_real_fetch_hooks_recordings_rejoin_a_payload_cut_across_text_records() -> None:
    """OpenRouter's Responses streams, as its ai-sdk-provider's tests recorded them: the
    response.completed a network chunk cut is rejoined from its two `text` records."""
    (plain,) = check_file(Path(str(FETCH_HOOKS).format("CHlILDuJN6g-gpt-4o-mini"))).responses
    assert (plain.verdict, plain.events, plain.terminal) == ("PASS", 10, "response.completed")
    assert plain.findings == []
    report = check_file(Path(str(FETCH_HOOKS).format("9bj2RDJrHNF-function-call")))
    (tool,) = report.responses
    assert (tool.events, tool.terminal, report.notes) == (6, "response.completed", [])
    # OpenRouter's own deviation: the done function_call item, and the completed output, drop
    # the `id` the added item carried. The API's types make it optional and nothing is lost:
    # a SHOULD, not a FAIL (a different id would be MUST item.id_match)
    assert tool.verdict == "NON-STRICT"
    assert sorted({f.rule_id for f in tool.findings}) == ["item.id_omitted"]


def test_a_real_fetch_hooks_event_the_recorder_cut_off_is_noted_not_blamed() -> None:
    """The recorder kept only the start of this stream's response.completed (the chunk with its
    tail also held `[DONE]`, and only `[DONE]` was kept): that event is left out with a note;
    the response.created cut across two records is rejoined, so the stream starts at seq 0."""
    report = check_file(Path(str(FETCH_HOOKS).format("69A9tNSV4LJ-cut-off")))
    (response,) = report.responses
    assert report.notes == [
        "line 13: an event the recorder cut off (only the start of its data payload was kept):"
        " not judged"
    ]
    assert (response.events, response.terminal) == (5, None)
    assert response.response_id == "gen-1767766555-y9ohAWaVMG3LKH3oZa0I"  # from the rejoined one
    # not seq.start, lifecycle: only OpenRouter's omitted item id
    assert {f.rule_id for f in response.findings} == {"item.id_omitted"}


def test_a_fetch_hooks_payload_cut_into_three_and_raw_sse_chunks_are_read(tmp_path: Path) -> None:
    from tests.protocol.conftest import full_stream

    events = full_stream()
    first, second, *rest = events
    payload = json.dumps(second)
    third = len(payload) // 3
    records: list[dict[str, Any]] = [
        {"text": f"event: {first['type']}\n"},  # a chunk that held only the event's name
        {"json": first},
        {"text": payload[:third]},
        {"text": payload[third : 2 * third]},  # a middle piece: no blank line yet
        {"text": payload[2 * third :] + "\n\n"},
        {"text": "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in rest)},
        {"text": "[DONE]"},
    ]
    path = tmp_path / "response.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = check_file(path)
    (response,) = report.responses
    assert (response.verdict, response.events, report.notes) == ("PASS", len(events), [])


GO_VCR_RESPONSES = FORMATS / "go-vcr-fantasy-openai-gpt-4o-simple_streaming.yaml"


def test_a_real_go_vcr_cassette_of_a_responses_stream_passes(capsys: Any) -> None:
    """go-vcr v2 as charmbracelet/fantasy records api.openai.com (the official Go SDK)."""
    assert main(["check", str(GO_VCR_RESPONSES)]) == 0
    out = capsys.readouterr().out
    assert "10 events from interaction 1, line 1, response.completed): PASS" in out
    (response,) = check_file(GO_VCR_RESPONSES).responses
    assert response.findings == []
