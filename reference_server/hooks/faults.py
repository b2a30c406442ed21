"""Opt-in faults (`wsmode serve --fault NAME`): proof that the conformance suites catch them.

Two kinds: *event faults* rewrite the events of a response on their way out (after the emitter's
self-check, so the emitter stays honest), and *behaviour faults* switch a server mechanism to a
wrong variant at the one place that mechanism lives (the session, the cache, the resolver).

A third, parameterised kind is `CaseBehaviour`: what a client case of `wsmode certify-client`
asks of the server (an upgrade refused with a status, a connection dropped mid-stream, a
response failed with a code, ...). Those are legal server behaviours a client must survive, not
bugs; `case_script.CaseScript` carries them out. All are off by default.

`Faults` has one flag per fault; its field names are the CLI names with `_` for `-`, and each
field carries its kind and what it breaks, so the tables below are derived, never retyped.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

from harness.errors import ServerError
from harness.protocol.errors import ApiError
from harness.protocol.events import Event, reached_output_cap

FaultKind = Literal["event", "behaviour"]
_TERMINAL_TYPES: Final = ("response.completed", "response.incomplete", "response.failed")


def _fault(kind: FaultKind, what: str) -> bool:
    return dataclasses.field(default=False, metadata={"kind": kind, "what": what})


@dataclass(frozen=True)  # no slots: `rewrites_events` is cached on the instance
class Faults:
    """The active faults; each mechanism consults its own flag where it lives."""

    # -- event faults: applied by EventFaults to every outgoing event of a response --------
    skip_sequence_number: bool = _fault("event", "sequence_number jumps by 2 after the third event")
    missing_created: bool = _fault("event", "response.created is never sent")
    delta_after_done: bool = _fault("event", "an extra output_text.delta follows output_text.done")
    done_text_mismatch: bool = _fault(
        "event", "output_text.done carries text that differs from the deltas"
    )
    double_terminal: bool = _fault("event", "the terminal event is sent twice")
    response_id_changes: bool = _fault(
        "event", "the terminal event carries a different response id"
    )
    missing_usage: bool = _fault("event", "the terminal response has no usage")
    flat_error: bool = _fault(
        "event", "error events are flat instead of nesting {type, code, message, param}"
    )
    wrong_output_index: bool = _fault(
        "event", "output_item.added announces output_index 1 for the first item"
    )
    item_done_mismatch: bool = _fault(
        "event", "output_item.done carries content that differs from the stream"
    )
    completed_with_incomplete: bool = _fault(
        "event", "a response cut short ends with response.completed carrying status incomplete"
    )
    missing_response_fields: bool = _fault(
        "event", "Response objects lack store and completed_at; empty metadata is null, not {}"
    )
    # the field values (issue 41): each plausible for a gateway or server to ship
    zero_output_tokens: bool = _fault(
        "event",
        "the terminal's usage reports output_tokens 0 (total = input) although text streamed",
    )
    output_over_cap: bool = _fault(
        "event", "a response cut by max_output_tokens reports 8 output tokens more than the cap"
    )
    details_over_total: bool = _fault(
        "event", "usage.output_tokens_details.reasoning_tokens exceeds output_tokens by 1"
    )
    relist_parent_output: bool = _fault(
        "event", "a continuation's terminal output lists its parent's items again before its own"
    )
    created_at_ms: bool = _fault(
        "event", "created_at and completed_at are sent in milliseconds instead of unix seconds"
    )
    echo_last_response: bool = _fault(
        "event",
        "previous_response_id echoes the last response the server finished, not the request's "
        "(wrong for a new chain or a continuation from an older parent)",
    )
    stream_id_of_last_create: bool = _fault(
        "event",
        "every event carries the stream_id of the latest create that named one (another running "
        "lane's id; the last named lane's id on default-lane events)",
    )
    # -- behaviour faults: consulted by the session, the services, the turn pipeline -------
    close_on_request_error: bool = _fault(
        "behaviour", "the socket is closed after a request-scoped error"
    )
    interleave_queued: bool = _fault(
        "behaviour", "queued creates run concurrently and their events interleave"
    )
    shared_cache: bool = _fault("behaviour", "one connection cache is shared by every connection")
    no_failure_eviction: bool = _fault(
        "behaviour", "a failed continuation does not evict its parent"
    )
    cache_fifo: bool = _fault(
        "behaviour", "the connection cache evicts in insertion order instead of LRU"
    )
    store_false_persisted: bool = _fault(
        "behaviour", "store=false responses are written to disk and hydrate"
    )
    ignore_lifetime: bool = _fault("behaviour", "the connection lifetime limit is never enforced")
    inherit_instructions: bool = _fault(
        "behaviour", "instructions are inherited through previous_response_id"
    )
    reject_stream_field: bool = _fault(
        "behaviour", "a response.create carrying stream:true is refused"
    )
    accept_background: bool = _fault("behaviour", "background:true is accepted over WebSocket")
    drop_queued: bool = _fault(
        "behaviour", "creates sent while one is in flight are silently dropped"
    )
    drop_context: bool = _fault(
        "behaviour",
        "a continuation resolves and echoes previous_response_id, but its prompt holds only the "
        "new items (the parent's context is dropped)",
    )
    binary_crash: bool = _fault(
        "behaviour", "a binary frame drops the TCP connection (1006: no error, no close frame)"
    )
    ignore_named_tool_choice: bool = _fault(
        "behaviour", "a named tool_choice is ignored: the model answers in text"
    )
    queue_injects: bool = _fault(
        "behaviour",
        "response.inject waits behind the response it targets (as in a lane's FIFO): a "
        "multi-agent response waiting for that tool output deadlocks",
    )
    queue_steers: bool = _fault(
        "behaviour",
        "response.steer waits behind the response it steers (a gateway queueing client events it "
        "does not know): the steer reaches the server after that response ended",
    )

    @classmethod
    def from_names(cls, names: Iterable[str]) -> Faults:
        """The flags for `names`; names that are no fault (a test's own switches) are ignored."""
        chosen = frozenset(names)
        return cls(**{f.name: _cli_name(f.name) in chosen for f in dataclasses.fields(cls)})

    @functools.cached_property
    def rewrites_events(self) -> bool:  # asked once per response: computed once
        return any(getattr(self, _field_name(name)) for name in EVENT_FAULTS)


def _cli_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def _field_name(cli_name: str) -> str:
    return cli_name.replace("-", "_")


def _table(kind: FaultKind) -> dict[str, str]:
    return {
        _cli_name(f.name): str(f.metadata["what"])
        for f in dataclasses.fields(Faults)
        if f.metadata["kind"] == kind
    }


EVENT_FAULTS: Final[dict[str, str]] = _table("event")
BEHAVIOUR_FAULTS: Final[dict[str, str]] = _table("behaviour")
ALL_FAULTS: Final[dict[str, str]] = {**EVENT_FAULTS, **BEHAVIOUR_FAULTS}


def check_fault_names(names: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(names)
    unknown = sorted(chosen - ALL_FAULTS.keys())
    if unknown:
        raise ValueError(f"unknown fault(s): {', '.join(unknown)}; known: {', '.join(ALL_FAULTS)}")
    return chosen


ErrorShape = Literal["nested", "flat", "string"]
AfterResponse = Literal["drop", "close-1001"]


@dataclass(frozen=True, slots=True)
class CaseBehaviour:
    """The server side of one client case (`wsmode certify-client`); the default does nothing.

    Counts are per server and across its connections ("the first upgrade", "create 1"), as a
    client case runs one client against one server. Indexes are 0-based.
    """

    refuse_upgrades: int = 0  # the first N upgrades get `refuse_status` with a JSON error body
    refuse_status: int = 0
    refuse_code: str = ""
    retry_after_s: int | None = None  # sent with the refusal (429)
    close_before_101: int = 0  # the first N upgrades: the TCP connection closes, no answer
    error_for_create: int | None = None  # this create is answered by an error event, not run
    # With target_input set, error_for_create, incomplete_for_create and fail_after_deltas act on
    # every create whose newest input item mentions it (a client that resends gets the same
    # answer, as from a real server), not on one numbered create.
    target_input: str | None = None
    error_for_lane: str | None = None  # creates on this lane are answered by an error event
    error_shape: ErrorShape = "nested"  # nested {error:{...}}, flat (openai-node), a string
    miss_continuations: int = 0  # the first N continuations find their parent evicted
    drop_after_deltas: int | None = None  # the first response is cut (1006) after N deltas
    drop_before_created: bool = False  # the first create is received, then 1006 before any event
    fail_after_deltas: int | None = None  # the first (or each targeted) response fails
    fail_code: str = "server_error"
    incomplete_for_create: int | None = None  # this create's response is capped: incomplete
    incomplete_cap_tokens: int = 3
    keepalive_every: int = 0  # a `keepalive` event after every N events of a response
    first_event_delay_s: float = 0.0  # each response's first event waits this long (TTFT)
    reply_tokens: int | None = None  # answers are one message of N filler tokens (a script)
    after_response: AfterResponse | None = None  # then, on the idle socket: 1006 or close 1001
    after_response_index: int = 0  # the create whose response goes out first
    after_response_delay_s: float = 0.05  # so the terminal is read before the socket goes

    @property
    def active(self) -> bool:
        return self != CaseBehaviour()


class InjectedFailure(ServerError):
    """Raised into a turn by a case's behaviour: the turn fails with `error` (error event, then
    response.failed), through the same path as an internal fault."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(slots=True)
class FaultMemory:
    """What the event faults that span responses remember (one per server: the kill matrix's
    cases use one connection at a time, so the server's last response is the connection's)."""

    last_finished: str | None = None  # echo-last-response
    last_stream_id: str | None = None  # stream-id-of-last-create
    outputs: OrderedDict[str, list[Any]] = dataclasses.field(default_factory=OrderedDict)

    def remember_output(self, response_id: str, output: list[Any]) -> None:
        self.outputs[response_id] = copy.deepcopy(output)
        while len(self.outputs) > _REMEMBERED_OUTPUTS:
            self.outputs.popitem(last=False)


_REMEMBERED_OUTPUTS: Final = 64


class EventFaults:
    """Rewrites one response's outgoing events according to the active event faults."""

    def __init__(self, faults: Faults, memory: FaultMemory | None = None) -> None:
        self.faults = faults
        self.memory = memory if memory is not None else FaultMemory()
        self._active = faults.rewrites_events
        self._text_done_seen = False

    def __bool__(self) -> bool:
        return self._active

    def apply(self, event: Event) -> list[Event]:
        if not self._active:
            return [event]
        event = copy.deepcopy(event)
        kind = event.get("type")
        faults = self.faults
        seq = event.get("sequence_number")
        if faults.skip_sequence_number and isinstance(seq, int) and seq >= 3:
            event["sequence_number"] = seq + 1
        if faults.missing_created and kind == "response.created":
            return []
        if faults.wrong_output_index and "output_index" in event:
            event["output_index"] += 1
        if faults.done_text_mismatch and kind == "response.output_text.done":
            event["text"] += " (altered)"
        if faults.item_done_mismatch and kind == "response.output_item.done":
            _alter_item(event["item"])
        if faults.missing_response_fields and isinstance(event.get("response"), dict):
            _strip_members(event["response"])
        if faults.completed_with_incomplete and kind == "response.incomplete":
            event["type"] = kind = "response.completed"  # the Response keeps status incomplete
        self._field_faults(event, kind)
        if kind in _TERMINAL_TYPES:
            response: dict[str, Any] = event["response"]
            if faults.response_id_changes:
                response["id"] = response["id"] + "x"
            if faults.missing_usage:
                response["usage"] = None
            if faults.double_terminal:
                return [event, copy.deepcopy(event)]
        if faults.flat_error and kind == "error":
            return [flatten_error(event)]
        out = [event]
        if faults.delta_after_done and kind == "response.output_text.done":
            if not self._text_done_seen:
                extra = {k: v for k, v in event.items() if k != "text"}
                extra.update(type="response.output_text.delta", delta="!")
                out.append(extra)
            self._text_done_seen = True
        return out

    def _field_faults(self, event: Event, kind: object) -> None:
        """The field-value faults (issue 41), on an event already copied."""
        faults, memory = self.faults, self.memory
        if faults.stream_id_of_last_create:
            if kind == "response.created" and isinstance(event.get("stream_id"), str):
                memory.last_stream_id = event["stream_id"]
            if memory.last_stream_id is not None:
                event["stream_id"] = memory.last_stream_id
        response = event.get("response")
        if not isinstance(response, dict):
            return
        parent = response.get("previous_response_id")
        if faults.echo_last_response:
            response["previous_response_id"] = memory.last_finished
        if faults.created_at_ms:
            for name in ("created_at", "completed_at"):
                if isinstance(response.get(name), int):
                    response[name] *= 1000
        if kind not in _TERMINAL_TYPES:
            return
        usage = response.get("usage")
        if isinstance(usage, dict):
            _alter_usage(usage, response, faults)
        own = response.get("output")
        if faults.relist_parent_output and isinstance(own, list):
            memory.remember_output(str(response.get("id")), own)
            earlier = memory.outputs.get(parent) if isinstance(parent, str) else None
            if earlier:
                response["output"] = [*copy.deepcopy(earlier), *own]
        memory.last_finished = str(response.get("id"))


def _alter_usage(usage: dict[str, Any], response: dict[str, Any], faults: Faults) -> None:
    if faults.zero_output_tokens:
        usage.update(output_tokens=0, total_tokens=usage.get("input_tokens", 0))
        usage["output_tokens_details"] = {"reasoning_tokens": 0}
    cap = response.get("max_output_tokens")
    if faults.output_over_cap and reached_output_cap(response) and isinstance(cap, int):
        usage.update(output_tokens=cap + 8, total_tokens=usage.get("input_tokens", 0) + cap + 8)
    if faults.details_over_total and isinstance(usage.get("output_tokens"), int):
        details = usage.get("output_tokens_details")
        usage["output_tokens_details"] = {
            **(details if isinstance(details, dict) else {}),
            "reasoning_tokens": usage["output_tokens"] + 1,
        }


def flatten_error(event: Event) -> Event:
    flat = {k: v for k, v in event.items() if k != "error"}
    flat.update(event.get("error", {}))
    flat["type"] = "error"
    return flat


def _strip_members(response: dict[str, Any]) -> None:
    response.pop("store", None)
    response.pop("completed_at", None)
    if not response.get("metadata"):
        response["metadata"] = None


def _alter_item(item: dict[str, Any]) -> None:
    if item.get("type") == "function_call":
        item["arguments"] = "{}"
    elif item.get("type") == "message" and item.get("content"):
        item["content"][0]["text"] += " (altered)"
