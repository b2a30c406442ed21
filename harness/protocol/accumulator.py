"""Cross-event invariants of one response stream, with stable rule ids, and its reassembly.

`ResponseAccumulator` follows one response event by event: it applies the phase tables of
`state.py`, checks the invariants no single transition can see (sequence numbers, indices, ids,
deltas adding up to the done text, usage), and rebuilds the output items as it goes, so a load
client gets the final response and the function calls to answer from the same pass that checks
them. `stream.StreamAccumulator` splits a connection's events into responses (per lane).

Violations are collected as `Violation(rule_id, message, sequence_number, count)`, one per cause
per response (the first offending event's position, and how many events shared the cause), so an
old stream without `sequence_number` gives one finding, not one per event. `raise_on` decides whose
fault they are: the server's emitter raises LocalProtocolError, a checker RemoteProtocolError (an
INFO rule never raises: it reports, it does not judge).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.protocol.beta import BETA_EVENT_TYPES, agent_name, beta_problems
from harness.protocol.errors import ApiError, RuleBroken
from harness.protocol.events import (
    ERROR_PAYLOAD_REQUIRED,
    EVENT_TYPES,
    RESPONSE_REQUIRED,
    STRICT_ITEM_TYPES,
    TERMINAL_TYPES,
    missing_fields,
)
from harness.protocol.field_rules import terminal_problems
from harness.protocol.items import part_text
from harness.protocol.state import (
    ITEM_TRANSITIONS,
    ItemPhase,
    Phase,
    next_item_phase,
    next_response_phase,
)
from harness.protocol.stream_items import (
    BEFORE_RESUME,
    CONTENT_EVENTS,
    MAX_HELD_GAP,
    NOT_YET_ANNOUNCED,
    REASONING_TEXT_EVENTS,
    SUMMARY_EVENTS,
    OutputItem,
    Part,
    has_streamed,
    ids_before_resume,
    part_target,
)
from harness.protocol.stream_rules import (
    RULES as RULES,
)
from harness.protocol.stream_rules import (
    TERMINAL_STATUSES as TERMINAL_STATUSES,
)
from harness.protocol.stream_rules import (
    Violation as Violation,
)

_CORE_DELTA_FIELDS = {"sequence_number": int, "output_index": int, "item_id": str, "delta": str}


@dataclass(frozen=True, slots=True)
class _FastDelta:
    """How `ResponseAccumulator.feed` takes one delta type on its fast path (see `_feed_delta`)."""

    extra_fields: tuple[tuple[str, type], ...]  # required fields beyond the core four, typed
    item_type: str  # the item type whose grammar loops on this delta ...
    phases: tuple[ItemPhase, ...]  # ... in these phases (the phase stays unchanged)
    sink: Literal["part", "arguments", "reasoning_text"]  # where the delta text goes
    part_key: str  # content_index or summary_index (sink "part" only)


def _fast_delta(
    event_type: str, item_type: str, sink: Literal["part", "arguments", "reasoning_text"]
) -> _FastDelta:
    """Derived from the same tables the full path uses, so the two cannot drift apart."""
    extra = []
    required = EVENT_TYPES[event_type].required
    for name, kind in _CORE_DELTA_FIELDS.items():
        assert required.get(name) == (kind,), (event_type, name)
    for name, kinds in required.items():
        assert len(kinds) == 1 and kinds[0] is not bool, (event_type, name)
        if name not in _CORE_DELTA_FIELDS:
            extra.append((name, kinds[0]))
    table = ITEM_TRANSITIONS[item_type]
    phases = tuple(p for (p, t), after in table.items() if t == event_type and after is p)
    assert phases and item_type in STRICT_ITEM_TYPES, event_type
    part_key = (
        "content_index"
        if event_type in CONTENT_EVENTS or event_type in REASONING_TEXT_EVENTS
        else "summary_index"
    )
    assert sink == "arguments" or (part_key, int) in extra
    assert sink != "part" or event_type in CONTENT_EVENTS or event_type in SUMMARY_EVENTS
    return _FastDelta(tuple(extra), item_type, phases, sink, part_key)


# The hot events of every stream. On the happy path each changes nothing but the sequence
# counter and the text it appends; anything else (a missing field, a wrong type, a gap, an
# unknown index, a phase the grammar does not loop in) takes the full path, which reports it.
_FAST_DELTAS: dict[str, _FastDelta] = {
    "response.output_text.delta": _fast_delta("response.output_text.delta", "message", "part"),
    "response.refusal.delta": _fast_delta("response.refusal.delta", "message", "part"),
    "response.reasoning_summary_text.delta": _fast_delta(
        "response.reasoning_summary_text.delta", "reasoning", "part"
    ),
    "response.function_call_arguments.delta": _fast_delta(
        "response.function_call_arguments.delta", "function_call", "arguments"
    ),
    "response.reasoning_text.delta": _fast_delta(
        "response.reasoning_text.delta", "reasoning", "reasoning_text"
    ),
}
_IN_PROGRESS = Phase.IN_PROGRESS
_DONE = Phase.DONE
_REASONING_TEXT_OPEN = ItemPhase.REASONING_TEXT_OPEN


class ResponseAccumulator:
    """Checks and reassembles the events of one response."""

    def __init__(self, *, raise_on: type[RuleBroken] | None = None) -> None:
        self.raise_on = raise_on
        self.violations: list[Violation] = []
        self.unknown_types: set[str] = set()
        self.phase = Phase.IDLE
        self.response: dict[str, Any] | None = None  # latest full Response object seen
        self.response_id: str | None = None
        self.error: ApiError | None = None  # an in-response `error` event
        self.terminal_type: str | None = None
        self.items: list[OutputItem] = []
        self.event_count = 0
        self._next_seq: int | None = None
        self._open_item: int | None = None  # index of the strict item currently streaming
        self._open_by_agent: dict[str | None, int] = {}  # ... per agent (multi-agent responses)
        self.beta_events: list[Mapping[str, Any]] = []  # steer/inject replies about it (§2.2)
        self._causes: dict[tuple[str, str], Violation] = {}  # one violation per cause
        self.resumed_after: int | None = None  # set by `resume`: judged from this point on
        self._seen_own_item = False  # a resumed response: items before the first seen are padded

    def resume(self, event: Mapping[str, Any], after_seq: int | None) -> None:
        """Judge this response from a resume point (GET ?stream=true&starting_after=N, or a
        stream that continues a response seen before): before `event` is fed, the phase is
        what `event` may follow, the next number is N+1 (or `event`'s own when N is not known),
        and items announced before the resume point are taken as finished and unseen."""
        seq = event.get("sequence_number")
        first = seq if isinstance(seq, int) else None
        self.resumed_after = after_seq if after_seq is not None else (first or 1) - 1
        self._next_seq = self.resumed_after + 1 if first is not None else None
        kind = event.get("type")
        self.phase = _RESUME_PHASE.get(str(kind), Phase.IN_PROGRESS)
        self._violate(
            "seq.resumed", f"the stream resumes after sequence_number {self.resumed_after}", event
        )

    # -- public surface -------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.phase is _DONE

    def feed(self, event: Mapping[str, Any]) -> None:
        event_type = event.get("type")
        if type(event_type) is str:
            fast = _FAST_DELTAS.get(event_type)
            if fast is not None and self._feed_delta(fast, event):
                return
        self.event_count += 1
        if not isinstance(event_type, str):
            self._violate("event.schema", "event without a string 'type'", event)
            return
        if event_type in BETA_EVENT_TYPES:
            self._on_beta(event_type, event)
            return
        spec = EVENT_TYPES.get(event_type)
        if spec is None:
            self.unknown_types.add(event_type)
            self._violate("event.unknown_type", f"unknown event type {event_type}", event)
        elif event_type == "error" and is_flat_error(event):
            pass  # `_on_error` reports the flat shape; its fields are all top-level
        else:
            self._check_fields(event_type, event, spec.required)
        self._check_sequence(event)
        if self.phase is Phase.DONE:
            self.after_terminal(event)
            return
        if event_type == "error":
            self._on_error(event)
        elif event_type.startswith("response.") and "response" in event and spec is not None:
            self._on_lifecycle(event_type, event)
        elif spec is not None or event_type.startswith("response."):
            self._on_output(event_type, event)

    def after_terminal(self, event: Mapping[str, Any]) -> None:
        """Record an event that came after this response's terminal (PROTOCOL.md §3.3).

        `feed` calls it for events fed to this response; `StreamAccumulator` for the strays it
        sees on the response's lane before the next `response.created`.
        """
        self._violate(
            "lifecycle.after_terminal",
            f"{event.get('type')} after the response's terminal event",
            event,
            cause="after_terminal",
        )

    def _on_beta(self, event_type: str, event: Mapping[str, Any]) -> None:
        """A reply to a client's steer or inject about this response (§2.2): outside the response
        grammar, in any phase (a steer.pending follows the terminal). It may be numbered in the
        response's sequence (the next number: taken) or apart (no number judged)."""
        self.beta_events.append(event)
        problems = beta_problems(event)
        if problems:
            cause = ", ".join(problems)
            self._violate("beta.schema", f"{event_type}: {cause}", event, cause=cause)
        seq = event.get("sequence_number")
        if type(seq) is int and seq == self._next_seq:
            self._next_seq = seq + 1

    def output_items(self) -> list[dict[str, Any]]:
        """Finished output items, as the stream delivered them in output_item.done."""
        return [item.final for item in self.items if item.final is not None]

    def function_calls(self) -> list[dict[str, Any]]:
        return [i for i in self.output_items() if i.get("type") == "function_call"]

    def output_text(self) -> str:
        return "".join(
            "".join(part.pieces)
            for item in self.items
            if item.item_type == "message"
            for part in item.parts
        )

    def _feed_delta(self, fast: _FastDelta, event: Mapping[str, Any]) -> bool:
        """Take a delta that breaks no rule, with exactly the effect the full path would have.

        Returns False, having changed nothing, when any check of the full path could report
        something: the caller then feeds the event through the full path.
        """
        get = event.get
        seq = get("sequence_number")
        index = get("output_index")
        item_id = get("item_id")
        delta = get("delta")
        if (
            type(seq) is not int
            or type(index) is not int
            or type(item_id) is not str
            or type(delta) is not str
            or seq != self._next_seq
            or self.phase is not _IN_PROGRESS
            or "response" in event  # the full path would treat it as a lifecycle event
        ):
            return False
        for name, kind in fast.extra_fields:
            if type(get(name)) is not kind:
                return False
        items = self.items
        if not 0 <= index < len(items):
            return False
        item = items[index]
        open_index = self._open_item
        if (
            item_id != item.item_id
            or (open_index is not None and open_index != index)
            or item.item_type != fast.item_type
            or item.phase not in fast.phases
        ):
            return False
        sink = fast.sink
        if sink == "part":
            part_index = event[fast.part_key]
            parts = item.parts
            if not 0 <= part_index < len(parts):
                return False
            parts[part_index].pieces.append(delta)
        elif sink == "arguments":
            item.argument_pieces.append(delta)
        elif item.phase is _REASONING_TEXT_OPEN:  # reasoning text inside a content part
            part_index = event[fast.part_key]
            parts = item.reasoning_text
            if not 0 <= part_index < len(parts):
                return False
            parts[part_index].pieces.append(delta)
        self.event_count += 1
        self._next_seq = seq + 1
        return True

    # -- rules ----------------------------------------------------------------------------
    def _violate(
        self,
        rule_id: str,
        message: str,
        event: Mapping[str, Any] | None = None,
        *,
        cause: str | None = None,
    ) -> None:
        """Record a broken rule; a later event with the same cause (default: the same message)
        only raises the first violation's count."""
        key = (rule_id, message if cause is None else cause)
        seen = self._causes.get(key)
        if seen is not None:
            seen.count += 1
            return
        seq = event.get("sequence_number") if event is not None else None
        violation = Violation(rule_id, message, seq if isinstance(seq, int) else None)
        self._causes[key] = violation
        self.violations.append(violation)
        if self.raise_on is not None and RULES[rule_id][0] != "INFO":
            raise self.raise_on(rule_id, message)

    def _check_fields(
        self, event_type: str, event: Mapping[str, Any], required: Mapping[str, tuple[type, ...]]
    ) -> None:
        """`event.schema` for what a client needs; a field only the older API left out (absent,
        not mistyped) is `event.legacy_fields`, one finding per response."""
        legacy = [f"missing '{name}'" for name in _LEGACY_FIELDS if name in required]
        problems = missing_fields(event, required)
        old = [p for p in problems if p in legacy]
        if old:
            self._violate(
                "event.legacy_fields", f"{event_type}: {', '.join(old)}", event, cause="legacy"
            )
        problems = [p for p in problems if p not in legacy]
        if problems:
            cause = ", ".join(problems)
            self._violate("event.schema", f"{event_type}: {cause}", event, cause=cause)

    def _check_sequence(self, event: Mapping[str, Any]) -> None:
        seq = event.get("sequence_number")
        if not isinstance(seq, int):
            return  # a request-level error has none; schema rules report missing ones
        if self._next_seq is None:
            if seq != 0 and event.get("type") == "response.queued" and "response" in event:
                self._violate("seq.resumed", f"the stream resumes at sequence_number {seq}", event)
            elif seq != 0:
                self._violate("seq.start", f"first sequence_number is {seq}, expected 0", event)
        elif seq != self._next_seq:
            self._violate(
                "seq.contiguous",
                f"sequence_number {seq}, expected {self._next_seq}",
                event,
                cause="gap",
            )
        self._next_seq = seq + 1

    def _advance(self, event_type: str, event: Mapping[str, Any], *, is_output: bool) -> bool:
        after = next_response_phase(self.phase, event_type, is_output=is_output)
        if after is None:
            rule = "lifecycle.first_event" if self.phase is Phase.IDLE else "lifecycle.order"
            self._violate(rule, f"{event_type} not allowed in phase '{self.phase.value}'", event)
            return False
        if self.phase is Phase.CREATED and event_type == "response.completed":
            self._violate(
                "lifecycle.no_in_progress",
                "response.completed straight after response.created (a warm-up as gateways "
                "send it)",
                event,
            )
        self.phase = after
        return True

    def _on_lifecycle(self, event_type: str, event: Mapping[str, Any]) -> None:
        response = event["response"]
        if not self._advance(event_type, event, is_output=False):
            return
        if not isinstance(response, dict):  # `event.schema` has reported it
            if event_type in TERMINAL_TYPES:
                self.terminal_type = event_type
            return
        problems = missing_fields(response, RESPONSE_REQUIRED)
        if problems:
            cause = ", ".join(problems)
            self._violate("response.schema", f"{event_type}: {cause}", event, cause=cause)
        response_id = response.get("id")
        if self.response_id is None:
            self.response_id = response_id
        elif response_id != self.response_id:
            self._violate(
                "response.id_stable",
                f"id changed from {self.response_id} to {response_id}",
                event,
                cause="id",
            )
        self.response = response
        if event_type in TERMINAL_TYPES:
            self._on_terminal(event_type, response, event)

    def _on_terminal(
        self, event_type: str, response: Mapping[str, Any], event: Mapping[str, Any]
    ) -> None:
        self.terminal_type = event_type
        status = response.get("status")
        if status not in TERMINAL_STATUSES:
            self._violate("response.status_terminal", f"{event_type} with status {status!r}", event)
        elif status != event_type.removeprefix("response."):
            self._violate("response.status", f"{event_type} with status {status!r}", event)
        if event_type == "response.completed":
            self._check_unfinished(response, event)
        if event_type in ("response.completed", "response.incomplete"):
            self._check_output_listing(response, event)
            self._check_usage(response.get("usage"), event)
        # the field rules (field_rules.py), registered here so every reader applies them
        streamed = any(has_streamed(item) for item in self.items)
        announced = {item.item_id for item in self.items}
        if self.resumed_after is not None:  # what came before the resume point was not seen here
            announced |= ids_before_resume(self.items, response.get("output"))
        for rule_id, message in terminal_problems(
            response, streamed_output=streamed, announced_ids=announced
        ):
            self._violate(rule_id, message, event)
        if event_type == "response.failed":
            error = response.get("error")
            if not (isinstance(error, dict) and "code" in error and "message" in error):
                self._violate(
                    "failed.error", "response.failed without error {code, message}", event
                )
        if event_type == "response.incomplete":
            details = response.get("incomplete_details")
            if not (isinstance(details, dict) and isinstance(details.get("reason"), str)):
                self._violate("incomplete.reason", "no incomplete_details.reason", event)

    def _check_unfinished(self, response: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        """Items not done at completion: a strict item, or a hosted one the response does not
        list, is a violation; a hosted item it lists is how production streams look (§9)."""
        listed = response.get("output")
        listed_ids = (
            {i.get("id") for i in listed if isinstance(i, dict)}
            if isinstance(listed, list)
            else set()
        )
        unfinished: list[int] = []
        listed_only: list[int] = []
        for index, item in enumerate(self.items):
            if item.phase is ItemPhase.DONE:
                continue
            lenient = item.item_type not in STRICT_ITEM_TYPES
            (listed_only if lenient and item.item_id in listed_ids else unfinished).append(index)
        if unfinished:
            self._violate(
                "terminal.unfinished_items", f"items {unfinished} not done at completion", event
            )
        if listed_only:
            self._violate(
                "terminal.listed_not_done",
                f"items {listed_only} listed by the terminal without their output_item.done",
                event,
            )

    def _check_output_listing(self, response: Mapping[str, Any], event: Mapping[str, Any]) -> None:
        listed = response.get("output")
        if not isinstance(listed, list):
            return
        streamed = [item.item_id for item in self.items if item.final is not None]
        listed_ids = [i.get("id") for i in listed if isinstance(i, dict)]
        omitted = [n for n, i in enumerate(listed) if isinstance(i, dict) and "id" not in i]
        for index in omitted:  # listed by position without its id: judged as item.id_omitted
            if index < len(self.items) and self.items[index].item_id is not None:
                listed_ids[index] = self.items[index].item_id
        if omitted:
            self._violate(
                "item.id_omitted", f"the terminal's output omits the ids at {omitted}", event
            )
        if [i for i in listed_ids if i in streamed] != streamed:
            self._violate(
                "terminal.output_matches", f"output lists {listed_ids}, streamed {streamed}", event
            )

    def _check_usage(self, usage: Any, event: Mapping[str, Any]) -> None:
        fields = ("input_tokens", "output_tokens", "total_tokens")
        if not isinstance(usage, dict) or not all(isinstance(usage.get(f), int) for f in fields):
            self._violate("usage.present", "usage missing or incomplete", event)
            return
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
        if usage["total_tokens"] != usage["input_tokens"] + usage["output_tokens"] or (
            isinstance(cached, int) and cached > usage["input_tokens"]
        ):
            self._violate("usage.consistent", f"inconsistent usage {usage}", event)

    def _on_error(self, event: Mapping[str, Any]) -> None:
        if is_flat_error(event):
            self._violate("event.flat_error", "error event with a flat {code, message}", event)
        elif not is_nested_error(event):
            self._violate(
                "error.shape", "error event without a nested {type, code, message, param}", event
            )
        self.error = ApiError.from_event(dict(event))
        if self.phase is not Phase.IDLE:  # an error inside a response: response.failed must follow
            self._advance("error", event, is_output=False)

    def _on_output(self, event_type: str, event: Mapping[str, Any]) -> None:
        if not self._advance(event_type, event, is_output=True):
            return
        index = event.get("output_index")
        if not isinstance(index, int):
            return  # schema rule already reported it; unknown types without index pass
        if self.resumed_after is not None and not self._seen_own_item:
            self._seen_own_item = True
            bound = index if event_type == "response.output_item.added" else index + 1
            self.items.extend(OutputItem(BEFORE_RESUME, None, ItemPhase.DONE) for _ in range(bound))
        if event_type == "response.output_item.added":
            self._on_item_added(index, event)
            return
        if not 0 <= index < len(self.items):
            self._violate("item.unknown_index", f"{event_type} for output_index {index}", event)
            return
        item = self.items[index]
        if item.item_type == BEFORE_RESUME:
            return  # announced before the resume point: its grammar cannot be followed
        if item.item_type == NOT_YET_ANNOUNCED:
            self._violate("item.unknown_index", f"{event_type} for output_index {index}", event)
            return
        item_id = event.get("item_id")
        if item_id is not None and item.item_id is not None and item_id != item.item_id:
            self._violate(
                "item.id_match",
                f"item_id {item_id} at index {index} is {item.item_id}",
                event,
                cause=f"index {index}",
            )
        self._check_interleaving(index, item, event)
        if event_type not in EVENT_TYPES:
            return  # unknown types pass (reported as event.unknown_type); no grammar to apply
        after = next_item_phase(item.item_type, item.phase, event_type)
        if after is None:
            lenient = item.item_type not in STRICT_ITEM_TYPES
            rule = "item.after_done" if lenient and event_type != _ITEM_DONE else "item.grammar"
            self._violate(
                rule,
                f"{event_type} not allowed for {item.item_type} item in phase '{item.phase.value}'",
                event,
            )
            return
        item.phase = after
        if item.item_type in STRICT_ITEM_TYPES:
            self._apply_content(item, event_type, event)
        if event_type == "response.output_item.done":
            self._on_item_done(item, event)

    def _on_item_added(self, index: int, event: Mapping[str, Any]) -> None:
        fills_held = (
            0 <= index < len(self.items) and self.items[index].item_type == NOT_YET_ANNOUNCED
        )
        if index != len(self.items) and not fills_held:
            self._violate(
                "item.index_order", f"output_index {index}, expected {len(self.items)}", event
            )
            if not len(self.items) < index <= len(self.items) + MAX_HELD_GAP:
                return  # announced twice, negative, or far ahead: nothing to follow it by
            # announced ahead of its predecessors: their places are held, so the events of
            # every item go on being judged (one finding, not one per later event)
            gap = index - len(self.items)
            places = (OutputItem(NOT_YET_ANNOUNCED, None, ItemPhase.ADDED) for _ in range(gap))
            self.items.extend(places)
        raw = event.get("item")
        item = raw if isinstance(raw, dict) else {}
        item_type = str(item.get("type", ""))
        agent = agent_name(item) or agent_name(event)
        self._check_interleaving(index, None, event, agent)
        added = OutputItem(item_type, item.get("id"), ItemPhase.ADDED, agent)
        if index < len(self.items):
            self.items[index] = added  # a held place, announced now
        else:
            self.items.append(added)
        if item_type in STRICT_ITEM_TYPES:
            self._open_item = index
            self._open_by_agent[agent] = index

    def _check_interleaving(
        self,
        index: int,
        item: OutputItem | None,
        event: Mapping[str, Any],
        agent: str | None = None,
    ) -> None:
        """Strict items stream one after another; in a multi-agent response, per agent."""
        if item is not None and item.item_type not in STRICT_ITEM_TYPES:
            return
        owner = item.agent if item is not None else agent
        open_index = self._open_by_agent.get(owner)
        if open_index is None or open_index == index:
            return
        if self.items[open_index].phase is not ItemPhase.DONE:
            self._violate(
                "item.sequential", f"output_index {index} while {open_index} is still open", event
            )

    def _apply_content(self, item: OutputItem, event_type: str, event: Mapping[str, Any]) -> None:
        target = part_target(item, event_type)
        if target is not None:
            key, parts = target
            if event_type.endswith("part.added"):
                if event.get(key) != len(parts):
                    self._violate(
                        "part.index_order", f"{key} {event.get(key)}, expected {len(parts)}", event
                    )
                parts.append(Part())
                return
            part_index = event.get(key)
            if not isinstance(part_index, int) or not 0 <= part_index < len(parts):
                self._violate("part.unknown_index", f"{event_type} for {key} {part_index}", event)
                return
            self._apply_part_event(parts[part_index], event_type, event)
        elif event_type == "response.function_call_arguments.delta":
            item.argument_pieces.append(str(event.get("delta", "")))
        elif event_type == "response.function_call_arguments.done":
            item.done_arguments = str(event.get("arguments", ""))
            if item.argument_pieces and "".join(item.argument_pieces) != item.done_arguments:
                self._violate(
                    "arguments.done_matches_deltas", "arguments differ from their deltas", event
                )

    def _apply_part_event(self, part: Part, event_type: str, event: Mapping[str, Any]) -> None:
        if event_type.endswith(".delta"):
            part.pieces.append(str(event.get("delta", "")))
        elif event_type.endswith("_part.done") or event_type == "response.content_part.done":
            raw = event.get("part")
            text = part_text(raw) or ""
            if part.done_text is not None and text != part.done_text:
                self._violate("part.done_matches", "part text differs from the .done text", event)
        elif event_type.endswith(".done"):
            text = event.get("text", event.get("refusal", ""))
            part.done_text = str(text)
            if "".join(part.pieces) != part.done_text:
                self._violate(
                    "text.done_matches_deltas", "deltas do not add up to the .done text", event
                )

    def _on_item_done(self, item: OutputItem, event: Mapping[str, Any]) -> None:
        raw = event.get("item")
        final = raw if isinstance(raw, dict) else {}
        item.final = final
        if item.item_type not in STRICT_ITEM_TYPES:
            return
        if "id" not in final and item.item_id is not None:
            # the API's output item types make `id` optional and the SDKs put the done item at
            # its index: an omitted id loses nothing, a different one mixes two items
            self._violate("item.id_omitted", f"done item omits its id {item.item_id}", event)
        elif final.get("id") != item.item_id:
            self._violate(
                "item.id_match", f"done item id {final.get('id')} != {item.item_id}", event
            )
        if item.item_type == "function_call":
            if final.get("arguments") != item.done_arguments:
                self._violate(
                    "item.done_matches", "done item arguments differ from the stream", event
                )
            return
        key = "content" if item.item_type == "message" else "summary"
        self._check_done_parts(final, key, item.parts, event)
        if item.reasoning_text:
            self._check_done_parts(final, "content", item.reasoning_text, event)

    def _check_done_parts(
        self,
        final: Mapping[str, Any],
        key: str,
        streamed_parts: list[Part],
        event: Mapping[str, Any],
    ) -> None:
        parts = final.get(key)
        texts = (
            [part_text(p) or "" for p in parts if isinstance(p, dict)]
            if isinstance(parts, list)
            else []
        )
        streamed = [
            p.done_text if p.done_text is not None else "".join(p.pieces) for p in streamed_parts
        ]
        if texts != streamed:
            self._violate(
                "item.done_matches", f"done item {key} differs from the streamed parts", event
            )


_ITEM_DONE = "response.output_item.done"


# What a resumed stream's first event may follow: a later start event, or output (any other).
_RESUME_PHASE = {
    "response.queued": Phase.IDLE,
    "response.created": Phase.IDLE,
    "response.in_progress": Phase.CREATED,
}
# Required fields recordings of the older API (early 2025, PROTOCOL.md §9) do not carry.
_LEGACY_FIELDS = ("sequence_number", "logprobs")


def is_nested_error(event: Mapping[str, Any]) -> bool:
    payload = event.get("error")
    return isinstance(payload, dict) and not missing_fields(payload, ERROR_PAYLOAD_REQUIRED)


def is_flat_error(event: Mapping[str, Any]) -> bool:
    """openai-node's flat mid-stream error: code, message, param at the top level (§10)."""
    return "error" not in event and isinstance(event.get("message"), str) and "code" in event
