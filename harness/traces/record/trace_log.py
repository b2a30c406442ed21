"""What the recorder saw, as rollouts: observed exchanges, per-rollout builders, the trace log.

The proxy (`harness.traces.record.proxy`) feeds them; the rules they follow (what a rollout and a
turn are, stateless HTTP, custom tools, observed timings) are in the recorder's docstring.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.items import content_text, is_model_output, summary_text
from harness.protocol.stream import is_request_error
from harness.protocol.timing_marks import is_first_token_candidate, is_output_event
from harness.traces.converters.common import custom_call_arguments, infer_tools
from harness.traces.format import (
    OutputSpec,
    Rollout,
    TraceFormatError,
    Turn,
    dump_rollouts,
    estimate_tokens,
    input_message,
    validate_rollout,
)


@dataclass
class Observed:
    request: dict[str, Any]
    received_ns: int  # when the create reached the proxy
    first_output_ns: int | None = None  # the TTFE mark (protocol.timing_marks)
    first_token_ns: int | None = None  # the TTFT mark: first event carrying content
    terminal_ns: int | None = None
    accumulator: ResponseAccumulator = field(default_factory=ResponseAccumulator)
    final: dict[str, Any] | None = None  # a non-streamed HTTP answer
    connection: int | None = None  # which client connection it came on (HTTP)

    def feed(self, event: Mapping[str, Any], at_ns: int) -> None:
        if self.first_output_ns is None and is_output_event(event):
            self.first_output_ns = at_ns
        if self.first_token_ns is None and is_first_token_candidate(event):
            self.first_token_ns = at_ns
        if is_request_error(event, self.accumulator):
            self.terminal_ns = at_ns  # a refused request
            return
        self.accumulator.feed(event)
        if self.accumulator.done:
            self.terminal_ns = at_ns

    @property
    def response(self) -> dict[str, Any] | None:
        if self.final is not None:
            return self.final
        return self.accumulator.response if self.accumulator.done else None

    @property
    def completed(self) -> bool:
        response = self.response
        return response is not None and response.get("status") == "completed"

    def output_items(self) -> list[dict[str, Any]]:
        if self.final is not None:
            return [i for i in self.final.get("output") or [] if isinstance(i, dict)]
        return self.accumulator.output_items()


def _input_items(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = request.get("input")
    if isinstance(raw, str):
        return [input_message(raw)]
    if isinstance(raw, list):
        return [_as_trace_item(i) for i in raw if isinstance(i, dict)]
    return []


def _as_trace_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An input item in the trace's terms: custom tool calls and their outputs become function
    calls and function_call_outputs, as the recorded outputs do (see :func:`_output_spec`)."""
    kind = item.get("type")
    if kind == "custom_tool_call":
        return {
            "type": "function_call",
            "call_id": item.get("call_id"),
            "name": item.get("name"),
            "arguments": custom_call_arguments(str(item.get("input", ""))),
        }
    if kind == "custom_tool_call_output":
        return {
            "type": "function_call_output",
            "call_id": item.get("call_id"),
            "output": item.get("output"),
        }
    return dict(item)


def new_items_of_stateless(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items after the last model-output item: what a stateless client added this turn."""
    for index in range(len(items) - 1, -1, -1):
        if is_model_output(items[index]):
            return list(items[index + 1 :])
    return list(items)


def _output_spec(item: Mapping[str, Any], reasoning_tokens: int) -> OutputSpec | None:
    kind = item.get("type")
    if kind == "message":
        return OutputSpec.message(content_text(item.get("content")))
    if kind == "function_call":
        return OutputSpec.function_call(
            str(item.get("name", "")), str(item.get("arguments", "")), str(item.get("call_id", ""))
        )
    if kind == "custom_tool_call":  # freeform tools (apply_patch): the converter's mapping
        arguments = custom_call_arguments(str(item.get("input", "")))
        return OutputSpec.function_call(
            str(item.get("name", "")), arguments, str(item.get("call_id", ""))
        )
    if kind == "reasoning":
        summary = summary_text(item)
        return OutputSpec.reasoning(summary, max(0, reasoning_tokens - estimate_tokens(summary)))
    return None


# -- rollouts being built --------------------------------------------------------------------------
@dataclass
class RolloutBuilder:
    """The turns of one chain as they complete."""

    rollout_id: str
    http: bool  # recorded from HTTP requests (else one WebSocket connection)
    header: dict[str, Any] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    response_ids: list[str] = field(default_factory=list)
    carried: list[dict[str, Any]] = field(default_factory=list)  # warm-up input, not yet a turn
    last_terminal_ns: int | None = None
    last_input: list[dict[str, Any]] = field(default_factory=list)  # the last request's input
    pending_calls: set[str] = field(default_factory=set)  # call ids of the last output
    connection: int | None = None  # the client connection of the last request (HTTP)
    chained: bool = False  # continued by previous_response_id at least once
    closed: bool = False

    def add(self, obs: Observed) -> None:
        request = obs.request
        if request.get("previous_response_id") is not None:
            self.chained = True
        response = obs.response
        if response is None or not obs.completed:
            return  # failed / refused: the agent resends what it needs
        self.connection = obs.connection
        if not self.header:
            tools = [
                t
                for t in request.get("tools") or []
                if isinstance(t, dict) and t.get("type") == "function" and t.get("name")
            ]
            self.header = {
                "model": str(request.get("model") or response.get("model") or "unknown"),
                "instructions": request.get("instructions")
                if isinstance(request.get("instructions"), str)
                else None,
                "tools": tuple(tools),
            }
        response_id = response.get("id")
        if isinstance(response_id, str):
            self.response_ids.append(response_id)
        full = _input_items(request)
        items = full
        if request.get("previous_response_id") is None and (self.turns or self.carried):
            items = new_items_of_stateless(full)  # a stateless client resent the history
        self.last_input = full
        wait_ms = 0.0
        if self.last_terminal_ns is not None and self.turns:
            wait_ms = max(0.0, (obs.received_ns - self.last_terminal_ns) / 1e6)
        self.last_terminal_ns = obs.terminal_ns
        outputs = obs.output_items()
        usage = response.get("usage") if isinstance(response.get("usage"), Mapping) else {}
        details = usage.get("output_tokens_details") if usage else None
        reasoning_tokens = (
            int(details.get("reasoning_tokens") or 0) if isinstance(details, Mapping) else 0
        )
        specs = [s for s in (_output_spec(i, reasoning_tokens) for i in outputs) if s is not None]
        self.pending_calls = {s.call_id for s in specs if s.type == "function_call"}
        if request.get("generate") is False or not specs:
            self.carried.extend(items)
            return
        observed: dict[str, Any] = {}
        if obs.first_token_ns is not None:
            observed["ttft_ms"] = round((obs.first_token_ns - obs.received_ns) / 1e6, 3)
        if obs.first_output_ns is not None:
            observed["ttfe_ms"] = round((obs.first_output_ns - obs.received_ns) / 1e6, 3)
        if obs.terminal_ns is not None:
            observed["e2e_ms"] = round((obs.terminal_ns - obs.received_ns) / 1e6, 3)
        if usage:
            for key in ("input_tokens", "output_tokens"):
                if isinstance(usage.get(key), int):
                    observed[key] = usage[key]
            in_details = usage.get("input_tokens_details")
            if isinstance(in_details, Mapping) and isinstance(in_details.get("cached_tokens"), int):
                observed["cached_tokens"] = in_details["cached_tokens"]
        self.turns.append(
            Turn(
                index=len(self.turns),
                input=tuple([*self.carried, *items]),
                output=tuple(specs),
                tool_wait_ms=round(wait_ms, 1),
                observed=observed,
            )
        )
        self.carried = []

    def build(self) -> Rollout | None:
        if not self.turns:
            return None
        # Known only once every request is in: one previous_response_id makes it chained.
        stateless_http = self.http and not self.chained
        return Rollout(
            id=self.rollout_id,
            source="recorded",
            agent_kind="unknown",
            model=str(self.header.get("model", "unknown")),
            instructions=self.header.get("instructions"),
            # custom (freeform) tools are not function tools: their calls get inferred ones
            tools=infer_tools(self.turns, self.header.get("tools", ())),
            # the label every recording carries (the proxy's module path when it was first written)
            meta={"recorder": "harness.traces.recorder", "stateless_http": stateless_http},
            turns=tuple(self.turns),
        )


class TraceLog:
    """Every rollout seen, and the trace file they are written to."""

    def __init__(self, out: Path, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.builders: list[RolloutBuilder] = []
        self.skipped: dict[str, str] = {}
        self._seq = 0
        self._prefix = time.strftime("rec-%Y%m%dT%H%M%S")

    def new(self, *, http: bool) -> RolloutBuilder:
        self._seq += 1
        builder = RolloutBuilder(f"{self._prefix}-{self._seq:04d}", http)
        self.builders.append(builder)
        return builder

    def for_http(self, request: Mapping[str, Any], connection: int | None = None) -> RolloutBuilder:
        """The chain an HTTP request continues: by previous_response_id, or (stateless) the
        chain whose last input this request's input strictly extends, preferring the one last
        seen on the same connection, then the one whose pending call ids it answers; else a
        new chain."""
        previous = request.get("previous_response_id")
        if isinstance(previous, str):
            for builder in reversed(self.builders):
                if previous in builder.response_ids and not builder.closed:
                    return builder
            return self.new(http=True)
        items = _input_items(request)
        answered = {str(i.get("call_id")) for i in items if i.get("type") == "function_call_output"}
        candidates = [
            b
            for b in self.builders
            if not b.closed
            and not b.chained
            and b.last_input
            and len(items) > len(b.last_input)
            and items[: len(b.last_input)] == b.last_input
        ]
        if candidates:
            same = [b for b in candidates if connection is not None and b.connection == connection]
            answering = [b for b in candidates if b.pending_calls and b.pending_calls <= answered]
            return (same or answering or candidates)[-1]
        return self.new(http=True)

    def rollouts(self) -> list[Rollout]:
        out = []
        for builder in self.builders:
            rollout = builder.build()
            if rollout is None:
                continue
            try:
                validate_rollout(rollout)
            except TraceFormatError as exc:
                if builder.rollout_id not in self.skipped:
                    self.skipped[builder.rollout_id] = str(exc)
                    self.err.write(f"wsmode record: skipping {builder.rollout_id}: {exc}\n")
                continue
            out.append(rollout)
        return out

    def write(self) -> int:
        rollouts = self.rollouts()
        if rollouts:
            dump_rollouts(rollouts, self.out)
        return len(rollouts)


# -- the proxy -------------------------------------------------------------------------------------
