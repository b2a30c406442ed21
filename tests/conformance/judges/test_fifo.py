"""FIFO judged from response.created order and ids, tags only corroborating."""

from __future__ import annotations

from typing import Any

from harness.conformance.judges.fifo import echoed_tag, judge_fifo, order_fields


def created(rid: str, **response: Any) -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": rid, **response}}


def completed(rid: str, **response: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": {"id": rid, **response}}


def numbered(*events: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(events))


def test_untagged_responses_in_order_pass_with_a_note() -> None:
    events = numbered(created("r1"), completed("r1"), created("r2"), completed("r2"))
    verdict = judge_fifo(events, ["1", "2"], rule_id="queue.fifo")
    assert verdict.findings == []
    assert "echo neither metadata nor instructions" in verdict.notes[0]


def test_interleaved_responses_fail() -> None:
    events = numbered(created("r1"), created("r2"), completed("r1"), completed("r2"))
    verdict = judge_fifo(events, ["1", "2"], rule_id="lanes.fifo", where="lane a")
    assert [rule for rule, _ in verdict.findings] == ["lanes.fifo"]
    assert "lane a: response r2 started (event 1) before r1 ended" in verdict.findings[0][1]


def test_terminal_with_another_id_fails() -> None:
    events = numbered(created("r1"), completed("r9"))
    verdict = judge_fifo(events, ["1"], rule_id="queue.fifo")
    assert "carries id r9, but response.created announced r1" in verdict.findings[0][1]


def test_echoed_tags_out_of_order_fail_from_metadata_or_instructions() -> None:
    two, one = order_fields("2"), order_fields("1")
    events = numbered(
        created("r1", metadata=two["metadata"]),
        completed("r1"),
        created("r2", instructions=one["instructions"]),  # only instructions echoed
        completed("r2"),
    )
    verdict = judge_fifo(events, ["1", "2"], rule_id="queue.fifo")
    assert verdict.findings == [
        (
            "queue.fifo",
            "the socket: responses answered the creates in order ['2', '1'], not ['1', '2']",
        )
    ]
    assert echoed_tag({"instructions": "unrelated"}) is None
