"""The per-response phase machine, as transition tables (PROTOCOL.md §3.3).

Two levels: the response's lifecycle, and each output item's own grammar (by item type). Both
are plain tables `(phase, event_type) -> next phase`, so the whole grammar reads in one screen
and a rule can be changed in one place. The machine does not know whether it runs in the server
or in a checker; `accumulator.py` decides whose error a violation is.
"""

from __future__ import annotations

from enum import Enum
from typing import Final


class Phase(Enum):
    IDLE = "idle"  # nothing seen yet
    QUEUED = "queued"  # response.queued (background/resumed streams)
    CREATED = "created"  # response.created
    IN_PROGRESS = "in_progress"  # response.in_progress: output may flow
    ERRORED = "errored"  # an `error` event inside the response: only response.failed may follow
    DONE = "done"  # a terminal event was seen


# Output events (items, parts, deltas) are legal only in IN_PROGRESS; the accumulator applies the
# item table to them. `None` as event type stands for "any output event".
OUTPUT_EVENT: Final = "<output>"

RESPONSE_TRANSITIONS: Final[dict[tuple[Phase, str], Phase]] = {
    (Phase.IDLE, "response.created"): Phase.CREATED,
    (Phase.IDLE, "response.queued"): Phase.QUEUED,
    (Phase.QUEUED, "response.created"): Phase.CREATED,
    (Phase.QUEUED, "response.in_progress"): Phase.IN_PROGRESS,
    (Phase.CREATED, "response.queued"): Phase.QUEUED,
    (Phase.CREATED, "response.in_progress"): Phase.IN_PROGRESS,
    (Phase.CREATED, "response.failed"): Phase.DONE,  # early failure: created(0), failed(1)
    # A warm-up (generate:false) as the gateways send it and codex accepts: created(0),
    # completed(1), no in_progress (PROTOCOL.md §2.1). Valid; the accumulator notes it (INFO) and
    # the warm-up case judges the missing in_progress at SHOULD level.
    (Phase.CREATED, "response.completed"): Phase.DONE,
    (Phase.CREATED, "error"): Phase.ERRORED,
    (Phase.IN_PROGRESS, OUTPUT_EVENT): Phase.IN_PROGRESS,
    (Phase.IN_PROGRESS, "response.in_progress"): Phase.IN_PROGRESS,
    (Phase.IN_PROGRESS, "response.completed"): Phase.DONE,
    (Phase.IN_PROGRESS, "response.incomplete"): Phase.DONE,
    (Phase.IN_PROGRESS, "response.failed"): Phase.DONE,
    (Phase.IN_PROGRESS, "error"): Phase.ERRORED,
    (Phase.ERRORED, "response.failed"): Phase.DONE,
}


class ItemPhase(Enum):
    ADDED = "added"
    PART_OPEN = "part_open"  # content/summary part added, deltas flowing
    PART_TEXT_DONE = "part_text_done"  # the part's .done text event seen
    PART_CLOSED = "part_closed"  # the part's .part.done seen; another part may open
    ARGUMENTS = "arguments"  # function call arguments streaming
    ARGUMENTS_DONE = "arguments_done"
    REASONING_TEXT_OPEN = "reasoning_text_open"  # a reasoning_text content part, deltas flowing
    REASONING_TEXT_DONE = "reasoning_text_done"  # its reasoning_text.done seen
    DONE = "done"  # output_item.done


_A, _O, _T, _C = (
    ItemPhase.ADDED,
    ItemPhase.PART_OPEN,
    ItemPhase.PART_TEXT_DONE,
    ItemPhase.PART_CLOSED,
)
_RO, _RT = ItemPhase.REASONING_TEXT_OPEN, ItemPhase.REASONING_TEXT_DONE

ITEM_TRANSITIONS: Final[dict[str, dict[tuple[ItemPhase, str], ItemPhase]]] = {
    "message": {
        (_A, "response.content_part.added"): _O,
        (_C, "response.content_part.added"): _O,
        (_O, "response.output_text.delta"): _O,
        (_O, "response.output_text.annotation.added"): _O,
        (_O, "response.refusal.delta"): _O,
        (_O, "response.output_text.done"): _T,
        (_O, "response.refusal.done"): _T,
        # Annotations may trail the text's done event (PROTOCOL.md §9).
        (_T, "response.output_text.annotation.added"): _T,
        (_T, "response.content_part.done"): _C,
        (_C, "response.output_item.done"): ItemPhase.DONE,
    },
    "function_call": {
        (_A, "response.function_call_arguments.delta"): ItemPhase.ARGUMENTS,
        (ItemPhase.ARGUMENTS, "response.function_call_arguments.delta"): ItemPhase.ARGUMENTS,
        (_A, "response.function_call_arguments.done"): ItemPhase.ARGUMENTS_DONE,
        (ItemPhase.ARGUMENTS, "response.function_call_arguments.done"): ItemPhase.ARGUMENTS_DONE,
        (ItemPhase.ARGUMENTS_DONE, "response.output_item.done"): ItemPhase.DONE,
    },
    "reasoning": {
        (_A, "response.reasoning_summary_part.added"): _O,
        (_C, "response.reasoning_summary_part.added"): _O,
        (_O, "response.reasoning_summary_text.delta"): _O,
        (_O, "response.reasoning_summary_text.done"): _T,
        (_T, "response.reasoning_summary_part.done"): _C,
        (_A, "response.reasoning_text.delta"): _A,
        (_A, "response.reasoning_text.done"): _A,
        (_C, "response.reasoning_text.delta"): _C,
        (_C, "response.reasoning_text.done"): _C,
        # Raw chain of thought as content parts (gpt-oss style, PROTOCOL.md §9): content_part.added
        # -> reasoning_text.delta* -> reasoning_text.done -> content_part.done, per content_index.
        (_A, "response.content_part.added"): _RO,
        (_C, "response.content_part.added"): _RO,
        (_RO, "response.reasoning_text.delta"): _RO,
        (_RO, "response.reasoning_text.done"): _RT,
        (_RT, "response.content_part.done"): _C,
        # A reasoning item may carry no summary at all.
        (_A, "response.output_item.done"): ItemPhase.DONE,
        (_C, "response.output_item.done"): ItemPhase.DONE,
    },
}


def next_response_phase(phase: Phase, event_type: str, *, is_output: bool) -> Phase | None:
    """The phase after `event_type`, or None when the table forbids it."""
    key = OUTPUT_EVENT if is_output else event_type
    return RESPONSE_TRANSITIONS.get((phase, key))


def next_item_phase(item_type: str, phase: ItemPhase, event_type: str) -> ItemPhase | None:
    """The item's phase after `event_type`; None when forbidden.

    Item types without a table (hosted tools and whatever comes next, PROTOCOL.md §9) have the
    lenient grammar: any of their own events while open, done on `output_item.done`, nothing
    after it.
    """
    table = ITEM_TRANSITIONS.get(item_type)
    if table is not None:
        return table.get((phase, event_type))
    if phase is ItemPhase.DONE:
        return None
    return ItemPhase.DONE if event_type == "response.output_item.done" else phase
