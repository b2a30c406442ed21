"""The Response object's members judged by level (PROTOCOL.md §3.4)."""

from __future__ import annotations

from typing import Any

from harness.conformance.response_members import member_problems
from harness.protocol.events import response_object

REQUEST = {"store": False, "previous_response_id": None}


def complete(**fields: Any) -> dict[str, Any]:
    base = response_object(
        "resp_1",
        "m",
        created_at=0,
        status="completed",
        completed_at=1,
        store=False,
        previous_response_id=None,
        reasoning=None,
        text={},
        truncation="disabled",
        service_tier="default",
        max_output_tokens=None,
        prompt_cache_key=None,
        user=None,
    )
    return {**base, **fields}


def test_a_complete_response_has_no_problem_at_any_level() -> None:
    for level in ("MUST", "SHOULD", "MAY"):
        assert member_problems(level, complete(), REQUEST) == [], level


def test_must_metadata_object_and_shaped_error_and_details() -> None:
    assert "metadata is None" in member_problems("MUST", complete(metadata=None), REQUEST)[0]
    failed = complete(status="failed", error=None)
    assert member_problems("MUST", failed, REQUEST) == ["a failed response carries error null"]
    cut = complete(status="incomplete", incomplete_details={"why": 1}, completed_at=None)
    assert "incomplete_details" in member_problems("MUST", cut, REQUEST)[0]


def test_should_store_completed_at_previous_response_id() -> None:
    missing = complete()
    del missing["store"], missing["completed_at"]
    assert member_problems("SHOULD", missing, REQUEST) == ["no completed_at", "no store"]
    wrong = complete(store=True, previous_response_id="resp_0")
    problems = member_problems("SHOULD", wrong, REQUEST)
    assert "store is True" in problems[0] and "previous_response_id" in problems[1]
    cut = complete(status="incomplete", completed_at=5, incomplete_details={"reason": "x"})
    assert "expected null" in member_problems("SHOULD", cut, REQUEST)[0]


def test_may_lists_the_absent_optional_members() -> None:
    bare = response_object("resp_1", "m", created_at=0)
    assert member_problems("MAY", bare, REQUEST)[0].startswith("no reasoning, text, truncation")
