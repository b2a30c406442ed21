"""One response's output items as `accumulator.ResponseAccumulator` follows them: what each
item has streamed so far (its parts, arguments, final form), which part list a content event
works on, and the places held for items a stream has not announced (before a resume point, or
behind an index announced ahead of its predecessors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.protocol.state import ItemPhase


@dataclass(slots=True)
class Part:
    pieces: list[str] = field(default_factory=list)
    done_text: str | None = None


@dataclass(slots=True)
class OutputItem:
    item_type: str
    item_id: str | None
    phase: ItemPhase
    agent: str | None = None  # a multi-agent item's `agent.agent_name` (PROTOCOL.md §2.2)
    parts: list[Part] = field(default_factory=list)  # content parts, or reasoning summaries
    reasoning_text: list[Part] = field(default_factory=list)  # a reasoning item's content parts
    argument_pieces: list[str] = field(default_factory=list)
    done_arguments: str | None = None
    final: dict[str, Any] | None = None


CONTENT_EVENTS = frozenset(
    {
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.delta",
        "response.refusal.done",
        "response.content_part.done",
    }
)
SUMMARY_EVENTS = frozenset(
    {
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    }
)
REASONING_TEXT_EVENTS = frozenset({"response.reasoning_text.delta", "response.reasoning_text.done"})


def has_streamed(item: OutputItem) -> bool:
    """Whether the stream carried content the model generated (text, arguments, reasoning); a
    call a program issued (`caller.type` "program", programmatic tool calling) is not sampled."""
    caller = (item.final or {}).get("caller")
    if isinstance(caller, dict) and caller.get("type") == "program":
        return False
    parts = (*item.parts, *item.reasoning_text)
    return any(p.done_text or any(p.pieces) for p in parts) or bool(
        item.done_arguments or any(item.argument_pieces)
    )


# An item announced before a resumed stream's first event: taken as done, its events unjudged.
BEFORE_RESUME = "<before the resume point>"
# The place of an item not announced yet, held because a later index was announced first.
NOT_YET_ANNOUNCED = "<not announced yet>"
MAX_HELD_GAP = 64  # an index further ahead is not followed (no unbounded list from one event)


def ids_before_resume(items: list[OutputItem], listed: Any) -> set[str | None]:
    """The ids a resumed response's terminal lists at the places of items announced before the
    resume point: this stream never saw them announced, and they are not foreign."""
    if not isinstance(listed, list):
        return set()
    return {
        entry.get("id")
        for item, entry in zip(items, listed, strict=False)
        if item.item_type == BEFORE_RESUME and isinstance(entry, dict)
    }


def part_target(item: OutputItem, event_type: str) -> tuple[str, list[Part]] | None:
    """The part list (and its index key) a content event of `item` works on, if any.

    A reasoning item has two: its summaries, and (gpt-oss style) reasoning_text content parts;
    a reasoning_text event outside a content part (the older, part-less form) has none."""
    if item.item_type == "reasoning" and (
        event_type in REASONING_TEXT_EVENTS or event_type.startswith("response.content_part.")
    ):
        in_part = item.phase in (ItemPhase.REASONING_TEXT_OPEN, ItemPhase.REASONING_TEXT_DONE)
        opened_part = event_type.startswith("response.content_part.")
        return ("content_index", item.reasoning_text) if in_part or opened_part else None
    if event_type in SUMMARY_EVENTS or event_type == "response.reasoning_summary_part.added":
        return "summary_index", item.parts
    if event_type in CONTENT_EVENTS or event_type == "response.content_part.added":
        return "content_index", item.parts
    return None
