"""Opt-in faults (`wsmode serve --fault NAME`): proof that the conformance suites catch them.

Two kinds: *event faults* rewrite the events of a response on their way out (after the emitter's
self-check, so the emitter stays honest), and *behaviour faults* switch a server mechanism to a
wrong variant at the one place that mechanism lives (the session, the cache, the resolver).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

from harness.protocol.events import Event

EVENT_FAULTS: Final[dict[str, str]] = {
    "skip-sequence-number": "sequence_number jumps by 2 after the third event",
    "missing-created": "response.created is never sent",
    "delta-after-done": "an extra output_text.delta follows output_text.done",
    "done-text-mismatch": "output_text.done carries text that differs from the deltas",
    "double-terminal": "the terminal event is sent twice",
    "response-id-changes": "the terminal event carries a different response id",
    "missing-usage": "the terminal response has no usage",
    "flat-error": "error events are flat instead of nesting {type, code, message, param}",
    "wrong-output-index": "output_item.added announces output_index 1 for the first item",
    "item-done-mismatch": "output_item.done carries content that differs from the stream",
}

BEHAVIOUR_FAULTS: Final[dict[str, str]] = {
    "close-on-request-error": "the socket is closed after a request-scoped error",
    "interleave-queued": "queued creates run concurrently and their events interleave",
    "shared-cache": "one connection cache is shared by every connection",
    "no-failure-eviction": "a failed continuation does not evict its parent",
    "cache-fifo": "the connection cache evicts in insertion order instead of LRU",
    "store-false-persisted": "store=false responses are written to disk and hydrate",
    "ignore-lifetime": "the connection lifetime limit is never enforced",
    "inherit-instructions": "instructions are inherited through previous_response_id",
    "reject-stream-field": "a response.create carrying stream:true is refused",
    "accept-background": "background:true is accepted over WebSocket",
    "drop-queued": "creates sent while one is in flight are silently dropped",
}

ALL_FAULTS: Final[dict[str, str]] = {**EVENT_FAULTS, **BEHAVIOUR_FAULTS}


def check_fault_names(names: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(names)
    unknown = sorted(chosen - ALL_FAULTS.keys())
    if unknown:
        raise ValueError(f"unknown fault(s): {', '.join(unknown)}; known: {', '.join(ALL_FAULTS)}")
    return chosen


class EventFaults:
    """Rewrites one response's outgoing events according to the active event faults."""

    def __init__(self, faults: frozenset[str]) -> None:
        self.faults = faults & EVENT_FAULTS.keys()
        self._text_done_seen = False

    def __bool__(self) -> bool:
        return bool(self.faults)

    def apply(self, event: Event) -> list[Event]:
        if not self.faults:
            return [event]
        event = copy.deepcopy(event)
        kind = event.get("type")
        faults = self.faults
        seq = event.get("sequence_number")
        if "skip-sequence-number" in faults and isinstance(seq, int) and seq >= 3:
            event["sequence_number"] = seq + 1
        if "missing-created" in faults and kind == "response.created":
            return []
        if "wrong-output-index" in faults and "output_index" in event:
            event["output_index"] += 1
        if "done-text-mismatch" in faults and kind == "response.output_text.done":
            event["text"] += " (altered)"
        if "item-done-mismatch" in faults and kind == "response.output_item.done":
            _alter_item(event["item"])
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response: dict[str, Any] = event["response"]
            if "response-id-changes" in faults:
                response["id"] = response["id"] + "x"
            if "missing-usage" in faults:
                response["usage"] = None
            if "double-terminal" in faults:
                return [event, copy.deepcopy(event)]
        if "flat-error" in faults and kind == "error":
            return [flatten_error(event)]
        out = [event]
        if "delta-after-done" in faults and kind == "response.output_text.done":
            if not self._text_done_seen:
                extra = {k: v for k, v in event.items() if k != "text"}
                extra.update(type="response.output_text.delta", delta="!")
                out.append(extra)
            self._text_done_seen = True
        return out


def flatten_error(event: Event) -> Event:
    flat = {k: v for k, v in event.items() if k != "error"}
    flat.update(event.get("error", {}))
    flat["type"] = "error"
    return flat


def _alter_item(item: dict[str, Any]) -> None:
    if item.get("type") == "function_call":
        item["arguments"] = "{}"
    elif item.get("type") == "message" and item.get("content"):
        item["content"][0]["text"] += " (altered)"
