"""The rules of one response stream: stable ids, levels, meanings, and how a broken one is kept.

`ResponseAccumulator` (accumulator.py) reports these; conformance cases, fault tests, reports and
`wsmode check` refer to them by id.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.protocol.field_rules import FIELD_RULES
from harness.protocol.levels import StreamRuleLevel

# Every rule the accumulator can report, with its level (levels.py: MUST, SHOULD, or INFO for an
# observation never failed) and what it means. Rule ids are stable: conformance cases, fault
# tests and reports refer to them.
RULES: dict[str, tuple[StreamRuleLevel, str]] = {
    "event.schema": ("MUST", "a known event type carries its required fields with the right types"),
    "event.unknown_type": ("INFO", "unknown event types pass through (reported, never failed)"),
    "event.flat_error": (
        "SHOULD",
        "error events nest their payload; a flat {code, message, param} (openai-node) is tolerated",
    ),
    "seq.start": ("MUST", "sequence_number starts at 0 for every response"),
    "seq.contiguous": ("MUST", "sequence_number increases by exactly 1"),
    "seq.resumed": (
        "INFO",
        "a resumed background stream (GET ?stream=true&starting_after=N, or a stream continuing a "
        "response seen before) is judged from N+1 with whatever event comes next; one that "
        "starts elsewhere without either is still seq.start",
    ),
    "event.legacy_fields": (
        "SHOULD",
        "events carry sequence_number (and text deltas logprobs); recordings of the older API "
        "lack them, and the SDKs read such streams unharmed",
    ),
    "lifecycle.first_event": ("MUST", "a response starts with response.created"),
    "lifecycle.order": ("MUST", "events follow the lifecycle grammar of PROTOCOL.md §3.3"),
    "lifecycle.after_terminal": ("MUST", "nothing follows the response's terminal event"),
    "lifecycle.no_in_progress": (
        "INFO",
        "response.completed may follow response.created with no response.in_progress between: "
        "a warm-up (generate:false) as released gateways send it and codex accepts (PROTOCOL.md "
        "§2.1; the warm-up case judges it at SHOULD level)",
    ),
    "response.id_stable": ("MUST", "the response id never changes within a response"),
    "response.schema": ("MUST", "the Response object has its required members"),
    "response.status": ("SHOULD", "the terminal's response.status matches the terminal type"),
    "response.status_terminal": (
        "MUST",
        "a terminal event's response.status is a terminal status (completed, failed, incomplete, "
        "cancelled)",
    ),
    "item.index_order": ("MUST", "output_item.added announces output_index 0, 1, 2, ... in order"),
    "item.unknown_index": ("MUST", "events refer only to announced output indices"),
    "item.id_match": ("MUST", "item_id matches the id of the item announced at that index"),
    "item.id_omitted": (
        "SHOULD",
        "output_item.done and the terminal's output repeat the id each item was announced with "
        "(the API's output item types make it optional and the SDKs place items by index: an "
        "omitted id loses nothing, where a different one is item.id_match)",
    ),
    "item.grammar": ("MUST", "item events follow the item grammar (added, parts, deltas, done)"),
    "item.sequential": (
        "SHOULD",
        "strict items stream one after another, never interleaved (per agent: items of different "
        "agents of a multi-agent response may interleave)",
    ),
    "item.done_matches": ("MUST", "output_item.done carries the content the deltas built"),
    "item.after_done": ("INFO", "a hosted-tool item's own event after its output_item.done"),
    "part.index_order": ("MUST", "content/summary parts are announced 0, 1, 2, ... in order"),
    "part.unknown_index": ("MUST", "events refer only to announced content/summary indices"),
    "part.done_matches": ("MUST", "a part's .done carries the text its deltas built"),
    "text.done_matches_deltas": ("MUST", "the deltas concatenate to the .done text"),
    "arguments.done_matches_deltas": ("MUST", "argument deltas concatenate to the .done arguments"),
    "terminal.unfinished_items": ("MUST", "response.completed comes only after every item's done"),
    "terminal.listed_not_done": (
        "INFO",
        "a hosted-tool item the terminal response lists without its own output_item.done",
    ),
    "terminal.output_matches": ("MUST", "the terminal response lists the items that were streamed"),
    "usage.present": ("MUST", "a completed or incomplete response reports usage"),
    "usage.consistent": ("MUST", "total = input + output tokens; cached <= input"),
    "error.shape": ("MUST", "error events nest {type, code, message, param} under 'error'"),
    "failed.error": ("MUST", "response.failed carries response.error {code, message}"),
    "incomplete.reason": ("MUST", "response.incomplete carries incomplete_details.reason"),
    "conn.no_interleave": ("MUST", "responses on one lane never interleave (FIFO, one in flight)"),
    # The 2026 beta replies (PROTOCOL.md §2.2): reported wherever they appear, their shape judged
    # only by the cases of a target that declares the capability (`steer`, `multi_agent`).
    "event.beta": (
        "INFO",
        "a beta reply (response.steer.*, response.inject.*) passes through the response grammar",
    ),
    "beta.schema": (
        "MUST",
        "a beta reply carries its required fields (openai-python 3.57 beta types: steer {id, "
        "previous_response_id}, error {code, message}, the returned input)",
    ),
    **FIELD_RULES,  # the rules about field values (issue 41), with their sources in that module
}


# A terminal event's response.status must be one of these (the SDK's ResponseStatus minus the
# running states): clients branch on it.
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "incomplete", "cancelled"})


@dataclass(slots=True)
class Violation:
    rule_id: str
    message: str  # about the first offending event
    sequence_number: int | None = None  # the first offending event's
    count: int = 1  # events that broke the rule for the same cause

    @property
    def level(self) -> StreamRuleLevel:
        return RULES[self.rule_id][0]

    def describe(self) -> str:
        """The message, with how many events shared the cause when more than one did."""
        return self.message if self.count == 1 else f"{self.message} ({self.count} events)"
