"""The items the accumulator follows: which part list a content event works on, and the ids a
resumed stream's terminal lists at places it never saw announced."""

from __future__ import annotations

from harness.protocol.state import ItemPhase
from harness.protocol.stream_items import (
    BEFORE_RESUME,
    NOT_YET_ANNOUNCED,
    OutputItem,
    ids_before_resume,
    part_target,
)


def test_a_reasoning_item_keeps_summaries_and_reasoning_text_apart() -> None:
    item = OutputItem("reasoning", "rs_1", ItemPhase.ADDED)
    summary = part_target(item, "response.reasoning_summary_text.delta")
    assert summary is not None and summary[0] == "summary_index" and summary[1] is item.parts
    text = part_target(item, "response.content_part.added")
    assert text is not None and text[0] == "content_index" and text[1] is item.reasoning_text
    message = OutputItem("message", "msg_1", ItemPhase.ADDED)
    content = part_target(message, "response.output_text.delta")
    assert content is not None and content[1] is message.parts
    assert part_target(message, "response.function_call_arguments.delta") is None


def test_only_places_before_the_resume_point_lend_their_listed_ids() -> None:
    items = [
        OutputItem(BEFORE_RESUME, None, ItemPhase.DONE),
        OutputItem(NOT_YET_ANNOUNCED, None, ItemPhase.ADDED),
        OutputItem("message", "msg_2", ItemPhase.DONE),
    ]
    listed = [{"id": "rs_0"}, {"id": "fc_1"}, {"id": "msg_2"}]
    assert ids_before_resume(items, listed) == {"rs_0"}
    assert ids_before_resume(items, None) == set()
