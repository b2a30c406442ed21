"""The Response object's members judged by level (PROTOCOL.md §3.4)."""

from __future__ import annotations

from typing import Any

from harness.conformance.judges.response_members import member_problems
from harness.protocol.events import PRODUCTION_MEMBERS, response_object

REQUEST = {"store": False, "previous_response_id": None}
USAGE = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1}}


def complete(**fields: Any) -> dict[str, Any]:
    base = response_object(
        "resp_1", "m", created_at=1_760_000_000, status="completed", completed_at=1_760_000_001
    )
    return {**base, "store": False, "usage": USAGE, **fields}


def test_a_complete_response_has_no_problem_at_any_level() -> None:
    for level in ("MUST", "SHOULD", "MAY"):
        assert member_problems(level, complete(), REQUEST) == [], level


def test_must_metadata_object_and_shaped_error_and_details() -> None:
    assert "metadata is None" in member_problems("MUST", complete(metadata=None), REQUEST)[0]
    failed = complete(status="failed", error=None)
    assert member_problems("MUST", failed, REQUEST) == ["a failed response carries error null"]
    cut = complete(status="incomplete", incomplete_details={"why": 1}, completed_at=None)
    assert "incomplete_details" in member_problems("MUST", cut, REQUEST)[0]


def test_an_absent_member_is_not_judged_here() -> None:
    """An absent `metadata` is 3.4.response.required-fields' finding, never counted twice."""
    absent = complete()
    del absent["metadata"]
    assert member_problems("MUST", absent, REQUEST) == []


def test_should_names_every_production_member_missing() -> None:
    missing = complete()
    for name in ("background", "presence_penalty", "top_logprobs", "safety_identifier"):
        del missing[name]
    assert member_problems("SHOULD", missing, REQUEST) == [
        "no background, presence_penalty, safety_identifier, top_logprobs"
    ]
    assert {"background", "frequency_penalty", "max_tool_calls"} <= PRODUCTION_MEMBERS


def test_should_judges_the_values_the_request_implies() -> None:
    wrong = complete(store=True, previous_response_id="resp_0", top_logprobs=3, background=True)
    problems = member_problems("SHOULD", wrong, {**REQUEST, "top_logprobs": 5})
    assert [p.split(" is ")[0] for p in problems] == [
        "store",
        "background",
        "previous_response_id",
        "top_logprobs",
    ]
    cut = complete(status="incomplete", completed_at=5, incomplete_details={"reason": "x"})
    assert "expected null" in member_problems("SHOULD", cut, REQUEST)[0]
    tools = [{"type": "function", "name": "f", "parameters": {}}]
    assert member_problems("SHOULD", complete(tools=tools), REQUEST) == [
        "function tools echoed without 'strict': f"
    ]


def test_may_asks_for_cache_write_tokens() -> None:
    bare = complete(usage={"input_tokens_details": {"cached_tokens": 0}})
    assert member_problems("MAY", bare, REQUEST) == [
        "usage.input_tokens_details has no cache_write_tokens"
    ]
