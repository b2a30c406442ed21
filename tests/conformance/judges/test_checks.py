"""The checker's own pieces on canned streams: strays, terminals, the SDK opinion, the twin."""

from __future__ import annotations

import copy
from typing import Any

from harness.conformance.judges.cache_twin import CacheTwin
from harness.conformance.judges.case_exchange import CaseExchange, RecordingStream
from harness.conformance.judges.sdk_opinion import check_stream, is_structural
from harness.conformance.model.rules import rule_level
from harness.protocol.cache import Resolution
from harness.transport.received import TimedEvent
from tests.conformance.servers import canned_events


def feed_all(stream: RecordingStream, events: list[dict[str, Any]]) -> None:
    for event in events:
        stream.feed(event)


def rules(stream: RecordingStream) -> list[str]:
    return [v.rule_id for v in stream.every_violation()]


def test_two_clean_responses_raise_nothing() -> None:
    stream = RecordingStream()
    feed_all(stream, canned_events("resp_1") + canned_events("resp_2"))
    assert rules(stream) == [] and len(stream.seen) == 2


def test_a_second_terminal_is_a_stray() -> None:
    first = canned_events("resp_1")
    stream = RecordingStream()
    feed_all(stream, [*first, copy.deepcopy(first[-1]), *canned_events("resp_2")])
    found = rules(stream)
    assert "lifecycle.after_terminal" in found
    assert "lifecycle.first_event" in found  # the stray could not start a response either


def test_request_errors_between_responses_are_not_strays() -> None:
    error = {"type": "error", "status": 400, "error": {"type": "t", "code": "c", "message": "m"}}
    stream = RecordingStream()
    feed_all(
        stream, [*canned_events("resp_1"), {**error, "error": {**error["error"], "param": None}}]
    )
    assert rules(stream) == []
    assert len(stream.request_errors) == 1


def test_a_flat_error_is_non_strict_and_a_garbled_one_an_error_shape_violation() -> None:
    stream = RecordingStream()
    stream.feed({"type": "error", "status": 400, "code": "c", "message": "m", "param": None})
    assert rules(stream) == ["event.flat_error"]  # openai-node's form: SHOULD, not FAIL
    assert rule_level("event.flat_error") == "SHOULD"
    garbled = RecordingStream()
    garbled.feed({"type": "error", "error": "m"})
    assert rules(garbled) == ["error.shape"]


def test_case_exchange_reads_the_raw_terminal() -> None:
    events = canned_events("resp_1")
    events = [e for e in events if e["type"] != "response.created"]  # grammar broken
    stream = RecordingStream()
    exchange = CaseExchange({}, 0)
    for event in events:
        routed = stream.feed(event)
        exchange.events.append(TimedEvent(event, 0, 0))
        exchange.response = routed  # type: ignore[assignment]
    exchange.terminal = events[-1]
    assert exchange.ok and exchange.response_id == "resp_1"
    assert [i["type"] for i in exchange.items()] == ["message"] and exchange.calls() == []
    assert "lifecycle.first_event" in rules(stream)


def test_sdk_accepts_a_clean_stream_and_reports_its_text() -> None:
    report = check_stream(canned_events("resp_1"))
    assert report.available and report.findings == []
    assert report.final_text == "Hello there."
    assert any("cache_write_tokens" in note for note in report.notes)  # tolerated, noted


def test_sdk_accumulator_refuses_content_before_its_item() -> None:
    events = canned_events("resp_1")
    del events[2]  # no output_item.added
    report = check_stream(events)
    assert [f.rule_id for f in report.findings] == ["sdk.accumulate"]
    assert "before receiving its output item" in report.findings[0].message


def test_sdk_accumulator_refuses_a_changed_id() -> None:
    events = canned_events("resp_1")
    events[-1]["response"] = {**events[-1]["response"], "id": "resp_other"}
    assert [f.rule_id for f in check_stream(events).findings] == ["sdk.accumulate"]


def test_sdk_models_flag_structure_and_tolerate_new_values() -> None:
    events = canned_events("resp_1")
    events[4] = {k: v for k, v in events[4].items() if k != "delta"}  # a delta without delta
    flat = {"type": "error", "status": 400, "code": "c", "message": "m", "param": None}
    garbled = {"type": "error", "error": "not an object"}
    report = check_stream([*events, flat, garbled])
    models = [f for f in report.findings if f.rule_id == "sdk.event_model"]
    assert len(models) == 2
    assert {"response.output_text.delta", "error"} == {f.message.split()[0] for f in models}
    # the flat error openai-node declares is a note: the protocol core judges it (SHOULD)
    assert any("flat" in note for note in report.notes)
    unknown = check_stream([{"type": "response.wsmode_future.delta", "sequence_number": 0}])
    assert not [f for f in unknown.findings if f.rule_id == "sdk.event_model"]
    assert is_structural({"type": "missing", "loc": ("response", "id")})
    assert not is_structural({"type": "missing", "loc": ("usage", "x", "cache_write_tokens")})
    assert not is_structural({"type": "literal_error", "loc": ("response", "error", "code")})
    assert is_structural({"type": "string_type", "loc": ("delta",)})


def test_sdk_models_name_the_branch_the_item_is_and_tolerate_in_progress_items() -> None:
    events = canned_events("resp_1")
    searching = {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}  # no action
    added = {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0}
    assert check_stream([events[0], {**added, "item": searching}]).findings == []
    done = {**added, "type": "response.output_item.done", "item": {**searching, "id": 1}}
    (finding,) = [f for f in check_stream([done]).findings if f.rule_id == "sdk.event_model"]
    assert "ResponseFunctionWebSearch" in finding.message
    assert "ResponseOutputMessage" not in finding.message  # not the branches it is not


def test_the_twin_is_an_lru_with_failure_eviction() -> None:
    twin = CacheTwin(2)
    twin.on_completed(None, "a", store=False)
    twin.on_completed(None, "b", store=True)
    assert twin.predict("a") is Resolution.HIT and twin.predict(None) is None
    twin.on_completed("a", "c", store=False)  # a refreshed, b evicted
    assert twin.predict("b") is Resolution.HYDRATE  # stored
    assert twin.predict("a") is Resolution.HIT
    twin.on_failed("a")
    assert twin.predict("a") is Resolution.MISS
    assert twin.describe() == "cache (oldest first): c"


def test_exceptions_map_to_target_failures_or_harness_errors() -> None:
    from harness.conformance.model.verdict import CaseMeta, Verdict, decide_verdict
    from harness.conformance.runner.context import CaseContext, Unimplemented
    from harness.conformance.targets.plan import LiveTarget
    from harness.conformance.targets.profile import TargetProfile
    from harness.transport.failures import GarbageFrame, TargetClosed, TargetTimeout

    meta = CaseMeta("3.3.x", "3.3", "MUST", "events", "t", rules=("seq.start",))
    target = LiveTarget("t", "ws://127.0.0.1:9/v1/responses", None, None, None, TargetProfile())

    def grade(exc: BaseException | None) -> tuple[Verdict, list[str]]:
        ctx = CaseContext(meta, target, event_timeout_s=1, case_timeout_s=5)
        outcome = ctx.absorb(exc)
        return decide_verdict("MUST", outcome), [f.rule_id for f in outcome.findings]

    assert grade(None) == (Verdict.PASS, [])
    assert grade(TargetTimeout("x")) == (Verdict.FAIL, ["transport.stall"])
    assert grade(TargetClosed("x", 1011)) == (Verdict.FAIL, ["transport.closed"])
    assert grade(GarbageFrame("x", b"")) == (Verdict.FAIL, ["transport.garbage"])
    assert grade(TimeoutError()) == (Verdict.FAIL, ["case.timeout"])
    assert grade(AssertionError("no")) == (Verdict.FAIL, ["case.expectation"])
    assert grade(Unimplemented("needs x"))[0] is Verdict.UNIMPLEMENTED
    assert grade(KeyError("bug"))[0] is Verdict.ERROR


def test_lane_traffic_files_interleaved_lanes_and_counts_answers() -> None:
    from types import SimpleNamespace

    from harness.conformance.runner.context import LaneTraffic

    a = [{**e, "stream_id": "a"} for e in canned_events("resp_a")]
    b = [{**e, "stream_id": "b"} for e in canned_events("resp_b")]
    refused = {
        "type": "error",
        "status": 400,
        "stream_id": "c",
        "error": {"type": "invalid_request_error", "code": "x", "message": "m", "param": None},
    }
    traffic = LaneTraffic(SimpleNamespace(stream=RecordingStream()))  # type: ignore[arg-type]
    for event in [a[0], b[0], *a[1:], refused, *b[1:], copy.deepcopy(a[-1])]:  # a stray terminal
        traffic._file(TimedEvent(event, 0, 0))
    assert [(x.lane, x.describe()) for x in traffic.answers] == [
        ("a", "response.completed"),
        ("c", "error 400 x"),
        ("b", "response.completed"),
    ]
    assert traffic.first("b") == 1 and traffic.first("a", "response.completed") == 9
    assert traffic.answers_of("b")[0].position == len(traffic.arrivals) - 2
    assert traffic.answers_of("a")[0].completed and traffic.answers_of("a")[0].response["id"]
    assert traffic.summary() == "a: response.completed; c: error 400 x; b: response.completed"
    assert "conn.no_interleave" not in rules(traffic.conn.stream)  # lanes may interleave
