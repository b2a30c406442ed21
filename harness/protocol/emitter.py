"""The server side of the event grammar: builds a response's events in legal order.

The reference server never writes an event dict by hand; it calls `ResponseEmitter`, which
numbers events, keeps the Response object and the output items in step with what was streamed,
and feeds every event it builds through a `ResponseAccumulator` that raises LocalProtocolError on
any rule it breaks. So the server is held to exactly the rules the conformance suites apply.

A multi-agent response (`agent` given, PROTOCOL.md §2.2) tags its lifecycle events with that
root agent and each item, and the events about it, with the item's agent. Replies to a client's
steer or inject (`beta_event`) are numbered in the response's own sequence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.protocol.accumulator import ResponseAccumulator
from harness.protocol.beta import agent_tag
from harness.protocol.errors import ApiError, LocalProtocolError
from harness.protocol.events import Event

# Deltas are padded so their length does not leak token sizes (as upstream's `obfuscation`).
_OBFUSCATION_BLOCK = 16


def _part(refusal: bool, text: str) -> dict[str, Any]:
    if refusal:
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _obfuscation(delta: str) -> str:
    return "x" * (_OBFUSCATION_BLOCK - len(delta) % _OBFUSCATION_BLOCK)


class ResponseEmitter:
    """Builds the events of one response. Item methods must be called in grammar order."""

    def __init__(
        self,
        response: Mapping[str, Any],
        *,
        stream_id: str | None = None,
        obfuscate: bool = True,
        self_check: bool = True,
        agent: str | None = None,
    ) -> None:
        self.response: dict[str, Any] = {**response, "status": "in_progress", "output": []}
        self.agent = agent  # the root agent of a multi-agent response; None: no agent tags
        self._speaker: str | None = agent  # whose events these are: the open item's agent
        self.response.setdefault("usage", None)
        self.stream_id = stream_id
        self.obfuscate = obfuscate
        self.checker = ResponseAccumulator(raise_on=LocalProtocolError) if self_check else None
        self._seq = 0
        self._item: dict[str, Any] | None = None  # the item being streamed
        self._pieces: list[str] = []  # its current text/arguments so far
        self._refusal = False  # the open message streams a refusal part

    @property
    def response_id(self) -> str:
        return str(self.response["id"])

    @property
    def output(self) -> list[dict[str, Any]]:
        return list(self.response["output"])

    # -- framing --------------------------------------------------------------------------
    def _event(self, event_type: str, **fields: Any) -> Event:
        event: Event = {"type": event_type, "sequence_number": self._seq, **fields}
        if self.stream_id is not None:
            event["stream_id"] = self.stream_id
        if self._speaker is not None:
            event["agent"] = agent_tag(self._speaker)
        self._seq += 1
        if self.checker is not None:
            self.checker.feed(event)
        return event

    def _snapshot(self) -> dict[str, Any]:
        return {**self.response, "output": list(self.response["output"])}

    # -- lifecycle ------------------------------------------------------------------------
    def created(self) -> Event:
        return self._event("response.created", response=self._snapshot())

    def in_progress(self) -> Event:
        return self._event("response.in_progress", response=self._snapshot())

    def completed(self, usage: Mapping[str, Any], *, completed_at: int) -> Event:
        return self._terminal("completed", usage=dict(usage), completed_at=completed_at)

    def incomplete(self, reason: str, usage: Mapping[str, Any]) -> list[Event]:
        events = self._close_open_item(status="incomplete")
        events.append(
            self._terminal("incomplete", usage=dict(usage), incomplete_details={"reason": reason})
        )
        return events

    def failed(self, error: ApiError, *, usage: Mapping[str, Any] | None = None) -> list[Event]:
        """A runtime failure: the nested `error` event, then response.failed (PROTOCOL.md §4.1)."""
        events = [] if self._seq == 0 else [self._error_event(error)]
        if self._seq == 0:
            events.append(self.created())
        self._item = None
        self.response["output"] = []
        events.append(
            self._terminal(
                "failed",
                usage=dict(usage) if usage else None,
                error={"code": error.code or error.type, "message": error.message},
            )
        )
        return events

    def beta_event(self, event_type: str, **fields: Any) -> Event:
        """A reply to a steer or an inject about this response (§2.2), in its sequence; any time,
        after the terminal too (a steer.pending follows response.completed)."""
        event: Event = {"type": event_type, "sequence_number": self._seq, **fields}
        if self.stream_id is not None:
            event["stream_id"] = self.stream_id
        self._seq += 1
        if self.checker is not None:
            self.checker.feed(event)
        return event

    def _error_event(self, error: ApiError) -> Event:
        event = error.to_event(sequence_number=self._seq, stream_id=self.stream_id)
        if self._speaker is not None:  # a multi-agent response's error names its agent too
            event["agent"] = agent_tag(self._speaker)
        self._seq += 1
        if self.checker is not None:
            self.checker.feed(event)
        return event

    def _terminal(self, status: str, **changes: Any) -> Event:
        self.response.update(status=status, **changes)
        return self._event(f"response.{status}", response=self._snapshot())

    # -- items ----------------------------------------------------------------------------
    def _add_item(self, item: dict[str, Any], agent: str | None = None) -> Event:
        if self._item is not None:
            raise LocalProtocolError("item.sequential", "an item is already open")
        if self.agent is not None:
            self._speaker = agent or self.agent
            item["agent"] = agent_tag(self._speaker)
        self._item = item
        self._pieces = []
        return self._event(
            "response.output_item.added", output_index=len(self.response["output"]), item=dict(item)
        )

    def _done_item(self, final: dict[str, Any]) -> Event:
        index = len(self.response["output"])
        self.response["output"].append(final)
        self._item = None
        done = self._event("response.output_item.done", output_index=index, item=final)
        self._speaker = self.agent
        return done

    def _ids(self) -> dict[str, Any]:
        assert self._item is not None
        return {"item_id": self._item["id"], "output_index": len(self.response["output"])}

    def begin_message(
        self, item_id: str, *, refusal: bool = False, agent: str | None = None
    ) -> list[Event]:
        """Open a message with one content part: output text, or a refusal."""
        item = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        self._refusal = refusal
        part = _part(refusal, "")
        return [
            self._add_item(item, agent),
            self._event("response.content_part.added", **self._ids(), content_index=0, part=part),
        ]

    def text_delta(self, delta: str) -> Event:
        self._pieces.append(delta)
        if self._refusal:
            return self._event(
                "response.refusal.delta", **self._ids(), content_index=0, delta=delta
            )
        extra = {"obfuscation": _obfuscation(delta)} if self.obfuscate else {}
        return self._event(
            "response.output_text.delta",
            **self._ids(),
            content_index=0,
            delta=delta,
            logprobs=[],
            **extra,
        )

    def end_message(self, *, status: str = "completed") -> list[Event]:
        assert self._item is not None
        text = "".join(self._pieces)
        part = _part(self._refusal, text)
        ids = self._ids()
        if self._refusal:
            done = self._event("response.refusal.done", **ids, content_index=0, refusal=text)
        else:
            done = self._event(
                "response.output_text.done", **ids, content_index=0, text=text, logprobs=[]
            )
        return [
            done,
            self._event("response.content_part.done", **ids, content_index=0, part=part),
            self._done_item({**self._item, "status": status, "content": [part]}),
        ]

    def begin_function_call(
        self, item_id: str, call_id: str, name: str, *, agent: str | None = None
    ) -> list[Event]:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        return [self._add_item(item, agent)]

    def arguments_delta(self, delta: str) -> Event:
        self._pieces.append(delta)
        extra = {"obfuscation": _obfuscation(delta)} if self.obfuscate else {}
        return self._event(
            "response.function_call_arguments.delta", **self._ids(), delta=delta, **extra
        )

    def end_function_call(self, *, status: str = "completed") -> list[Event]:
        assert self._item is not None
        arguments = "".join(self._pieces)
        ids = self._ids()
        return [
            self._event(
                "response.function_call_arguments.done",
                **ids,
                name=self._item["name"],
                arguments=arguments,
            ),
            self._done_item({**self._item, "status": status, "arguments": arguments}),
        ]

    def begin_reasoning(self, item_id: str, *, agent: str | None = None) -> list[Event]:
        item = {"id": item_id, "type": "reasoning", "summary": []}
        part = {"type": "summary_text", "text": ""}
        return [
            self._add_item(item, agent),
            self._event(
                "response.reasoning_summary_part.added", **self._ids(), summary_index=0, part=part
            ),
        ]

    def summary_delta(self, delta: str) -> Event:
        self._pieces.append(delta)
        extra = {"obfuscation": _obfuscation(delta)} if self.obfuscate else {}
        return self._event(
            "response.reasoning_summary_text.delta",
            **self._ids(),
            summary_index=0,
            delta=delta,
            **extra,
        )

    def end_reasoning(self) -> list[Event]:
        assert self._item is not None
        text = "".join(self._pieces)
        part = {"type": "summary_text", "text": text}
        ids = self._ids()
        return [
            self._event("response.reasoning_summary_text.done", **ids, summary_index=0, text=text),
            self._event("response.reasoning_summary_part.done", **ids, summary_index=0, part=part),
            self._done_item({**self._item, "summary": [part]}),
        ]

    def function_call_output(
        self, item_id: str, call_id: str, output: Any, *, agent: str | None = None
    ) -> list[Event]:
        """A tool output a client injected and the response committed, as an output item
        (a multi-agent response lists what resumed its agents, §2.2)."""
        item = {
            "id": item_id,
            "type": "function_call_output",
            "status": "in_progress",
            "call_id": call_id,
            "output": output,
        }
        added = self._add_item(item, agent)
        return [added, self._done_item({**item, "status": "completed"})]

    def _close_open_item(self, *, status: str) -> list[Event]:
        """End whatever item is streaming (used when a response is cut short)."""
        if self._item is None:
            return []
        kind = self._item["type"]
        if kind == "message":
            return self.end_message(status=status)
        if kind == "function_call":
            return self.end_function_call(status=status)
        return self.end_reasoning()
