"""The field-value faults (issue 41), each through the one rewriter, caught by the rule its case
judges: the response rules by the accumulator, the request rules against the create. (The kill
matrix proves the same end to end, through the suites: tests/conformance/test_kill_matrix.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import Event, response_object
from harness.protocol.field_rules import FIELD_RULES, request_problems
from reference_server.hooks.faults import EventFaults, FaultMemory, Faults

USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 3,
    "output_tokens_details": {"reasoning_tokens": 1},
    "total_tokens": 13,
}
NOW = 1_760_000_000


def response_events(
    response_id: str,
    *,
    parent: str | None = None,
    stream_id: str | None = None,
    capped: bool = False,
) -> list[Event]:
    base = response_object(
        response_id,
        "m",
        created_at=NOW,
        previous_response_id=parent,
        max_output_tokens=3 if capped else None,
    )
    emitter = ResponseEmitter(base, stream_id=stream_id)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_message(f"msg_{response_id}")
    events.append(emitter.text_delta("Hello"))
    if capped:
        events += emitter.incomplete("max_output_tokens", USAGE)
    else:
        events += emitter.end_message()
        events.append(emitter.completed(USAGE, completed_at=NOW + 1))
    return events


def through(rewriter: EventFaults, events: list[Event]) -> list[Event]:
    return [out for event in events for out in rewriter.apply(event)]


def field_rules_broken(events: list[Event], request: dict[str, Any]) -> set[str]:
    acc = ResponseAccumulator()
    for event in events:
        acc.feed(event)
    found = {v.rule_id for v in acc.violations} & set(FIELD_RULES)
    return found | {rule for rule, _ in request_problems(request, events)}


@pytest.mark.parametrize(
    ("fault", "capped", "rules"),
    [
        ("zero-output-tokens", False, {"usage.output_streamed"}),
        ("output-over-cap", True, {"usage.output_cap"}),
        ("details-over-total", False, {"usage.details_bounded"}),
        ("created-at-ms", False, {"time.unix_seconds"}),
    ],
)
def test_each_usage_and_time_fault_breaks_its_rule(
    fault: str, capped: bool, rules: set[str]
) -> None:
    rewriter = EventFaults(Faults.from_names([fault]))
    clean = response_events("resp_1", capped=capped)
    request = {"type": "response.create"}
    assert field_rules_broken(clean, request) == set()
    assert field_rules_broken(through(rewriter, clean), request) == rules


def test_relist_parent_output_lists_the_parents_items_in_the_continuation() -> None:
    faults, memory = Faults.from_names(["relist-parent-output"]), FaultMemory()
    parent = through(EventFaults(faults, memory), response_events("resp_1"))
    assert field_rules_broken(parent, {}) == set()
    child = through(EventFaults(faults, memory), response_events("resp_2", parent="resp_1"))
    listed = [item["id"] for item in child[-1]["response"]["output"]]
    assert listed == ["msg_resp_1", "msg_resp_2"]
    assert field_rules_broken(child, {"previous_response_id": "resp_1"}) == {"output.own_items"}


def test_echo_last_response_echoes_the_last_finished_one_not_the_requests() -> None:
    faults, memory = Faults.from_names(["echo-last-response"]), FaultMemory()
    first = through(EventFaults(faults, memory), response_events("resp_1"))
    assert field_rules_broken(first, {}) == set()  # nothing finished yet: null, as asked
    fresh = through(EventFaults(faults, memory), response_events("resp_2"))  # a new chain
    assert fresh[0]["response"]["previous_response_id"] == "resp_1"
    assert field_rules_broken(fresh, {}) == {"response.previous_response_id"}


def test_stream_id_of_last_create_tags_the_default_lane_with_the_named_one() -> None:
    faults, memory = Faults.from_names(["stream-id-of-last-create"]), FaultMemory()
    named = through(EventFaults(faults, memory), response_events("resp_1", stream_id="a"))
    assert field_rules_broken(named, {"stream_id": "a"}) == set()
    default = through(EventFaults(faults, memory), response_events("resp_2"))
    assert {e.get("stream_id") for e in default} == {"a"}
    assert field_rules_broken(default, {}) == {"lane.default_stream_id"}
