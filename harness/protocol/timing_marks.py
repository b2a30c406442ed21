"""Which event of a response marks its first token (TTFT) and its first event (TTFE).

One definition, used by the load client (`transport.exchange`), the locust users (through the
replay driver), the recorder and the reports (which print `TTFT_DEFINITION`):

- **TTFT** (`ttft_ms`) ends at the first event that carries *generated content*: a `*.delta`
  with a non-empty `delta` (output text, refusal, reasoning text, reasoning summary text,
  function-call arguments, custom tool input, hosted-tool deltas such as
  `code_interpreter_call_code` or `mcp_call_arguments`, audio, and any delta type added later,
  PROTOCOL.md §9), a partial image, or, for a response that streams no delta, a `*.done`
  carrying non-empty content (text, arguments, an item with content). The earliest such event
  wins, so an item finished without deltas before another streams still counts when it arrived.
  This is what AIPerf, GuideLLM and the vendor mean by time to first token.
- **TTFE** (`ttfe_ms`) ends at the first *output* event of any kind (not a lifecycle event,
  not `error`): typically `response.output_item.added`, which a server or gateway may send long
  before the first token. Results schema version 1 called this mark `ttft_ms`.

Sans-I/O: the functions look at event dicts only; the caller owns the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from harness.protocol.events import NON_OUTPUT_TYPES

TTFT_DEFINITION: Final = "first-content-token"
"""The TTFT mark of results schema version 2 and later."""
LEGACY_TTFT_DEFINITION: Final = "first-output-event"
"""What `ttft_ms` meant in results schema version 1: the mark now reported as `ttfe_ms`."""
TTFE_DEFINITION: Final = LEGACY_TTFT_DEFINITION

# content-bearing events that are not `*.delta`, with the field that holds the content
_PARTIAL_CONTENT: Final = {"response.image_generation_call.partial_image": "partial_image_b64"}
# members that hold generated content inside a `*.done` event, its part or its item
_CONTENT_FIELDS: Final = ("text", "refusal", "arguments", "input", "code", "transcript", "result")
_NESTED_FIELDS: Final = ("content", "summary", "outputs")


def is_content_delta(event: Mapping[str, Any]) -> bool:
    """True for a delta (or partial) event carrying at least one character of content."""
    event_type = event.get("type")
    if not isinstance(event_type, str):
        return False
    field = "delta" if event_type.endswith(".delta") else _PARTIAL_CONTENT.get(event_type)
    if field is None:
        return False
    value = event.get(field)
    return isinstance(value, str) and value != ""


def is_content_done(event: Mapping[str, Any]) -> bool:
    """True for a `*.done` event whose payload (or part, or item) carries content."""
    event_type = event.get("type")
    if not isinstance(event_type, str) or not event_type.endswith(".done"):
        return False
    return _has_content(event, depth=0)


def is_first_token_candidate(event: Mapping[str, Any]) -> bool:
    """True when `event` may be the TTFT mark: a content delta or a content-carrying done."""
    return is_content_delta(event) or is_content_done(event)


def is_output_event(event: Mapping[str, Any]) -> bool:
    """True for any event but the lifecycle ones and `error`: the TTFE mark."""
    return event.get("type") not in NON_OUTPUT_TYPES


def first_token_index(events: Iterable[Mapping[str, Any]]) -> int | None:
    """Index of the TTFT event in `events`, or None when no event carries content."""
    for index, event in enumerate(events):
        if is_first_token_candidate(event):
            return index
    return None


def first_output_index(events: Iterable[Mapping[str, Any]]) -> int | None:
    """Index of the TTFE event in `events`, or None when there is none."""
    for index, event in enumerate(events):
        if is_output_event(event):
            return index
    return None


def _has_content(payload: Mapping[str, Any], depth: int) -> bool:
    for name in _CONTENT_FIELDS:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return True
    if depth >= 3:  # event -> item -> content[] -> part: deep enough for every known shape
        return False
    for name in ("part", "item"):
        inner = payload.get(name)
        # (dict, Mapping): decoded JSON is dicts, tested at C speed; the ABC check is the fallback
        # (it costs microseconds per call when the caches are cold, as after an idle wake-up).
        if isinstance(inner, (dict, Mapping)) and _has_content(inner, depth + 1):
            return True
    for name in _NESTED_FIELDS:
        inner_list = payload.get(name)
        if isinstance(inner_list, list) and any(
            isinstance(x, (dict, Mapping)) and _has_content(x, depth + 1) for x in inner_list
        ):
            return True
    return False
