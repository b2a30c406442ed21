"""The event vocabulary: every server event type wsmode knows, with its required fields.

`EVENT_TYPES` is the single table both sides use: the reference server's emitter checks its own
events against it, and the conformance checker checks a target's. Unknown event types are legal
(PROTOCOL.md §9: new types keep appearing) and are reported, never rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

Event = dict[str, Any]

# JSON kinds a required field may take; `None` in a tuple means JSON null is allowed.
_STR = (str,)
_INT = (int,)
_OBJ = (dict,)
_LIST = (list,)
_STR_OR_NULL = (str, type(None))
_OBJ_OR_NULL = (dict, type(None))


@dataclass(frozen=True, slots=True)
class EventSpec:
    name: str
    required: Mapping[str, tuple[type, ...]]


def _spec(event_type: str, **required: tuple[type, ...]) -> EventSpec:
    return EventSpec(event_type, {"sequence_number": _INT, **required})


_ITEM = {"output_index": _INT, "item_id": _STR}
_PART = {**_ITEM, "content_index": _INT}
_SUMMARY = {**_ITEM, "summary_index": _INT}

LIFECYCLE_TYPES: Final = (
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.completed",
    "response.failed",
    "response.incomplete",
)
TERMINAL_TYPES: Final = frozenset({"response.completed", "response.failed", "response.incomplete"})
# Not output: the first event of any other type is the TTFE mark (protocol.timing_marks).
NON_OUTPUT_TYPES: Final = frozenset({*LIFECYCLE_TYPES, "error"})

# The progress events of hosted-tool items (openai-python 3.57 `ResponseStreamEvent`): each names
# its item by output_index and item_id and carries nothing else required.
HOSTED_STATUS_EVENTS: Final = (
    *(f"response.web_search_call.{s}" for s in ("in_progress", "searching", "completed")),
    *(f"response.file_search_call.{s}" for s in ("in_progress", "searching", "completed")),
    *(f"response.code_interpreter_call.{s}" for s in ("in_progress", "interpreting", "completed")),
    *(f"response.image_generation_call.{s}" for s in ("in_progress", "generating", "completed")),
    *(f"response.mcp_call.{s}" for s in ("in_progress", "completed", "failed")),
    *(f"response.mcp_list_tools.{s}" for s in ("in_progress", "completed", "failed")),
    "response.compaction.compacting",
)

EVENT_TYPES: Final[Mapping[str, EventSpec]] = {
    spec.name: spec
    for spec in (
        *(_spec(t, response=_OBJ) for t in LIFECYCLE_TYPES),
        _spec("response.output_item.added", output_index=_INT, item=_OBJ),
        _spec("response.output_item.done", output_index=_INT, item=_OBJ),
        _spec("response.content_part.added", **_PART, part=_OBJ),
        _spec("response.content_part.done", **_PART, part=_OBJ),
        _spec("response.output_text.delta", **_PART, delta=_STR, logprobs=_LIST),
        _spec("response.output_text.done", **_PART, text=_STR, logprobs=_LIST),
        _spec(
            "response.output_text.annotation.added",
            **_PART,
            annotation_index=_INT,
            annotation=_OBJ,
        ),
        _spec("response.refusal.delta", **_PART, delta=_STR),
        _spec("response.refusal.done", **_PART, refusal=_STR),
        _spec("response.function_call_arguments.delta", **_ITEM, delta=_STR),
        _spec("response.function_call_arguments.done", **_ITEM, arguments=_STR),
        _spec("response.custom_tool_call_input.delta", **_ITEM, delta=_STR),
        _spec("response.custom_tool_call_input.done", **_ITEM, input=_STR),
        _spec("response.reasoning_summary_part.added", **_SUMMARY, part=_OBJ),
        _spec("response.reasoning_summary_part.done", **_SUMMARY, part=_OBJ),
        _spec("response.reasoning_summary_text.delta", **_SUMMARY, delta=_STR),
        _spec("response.reasoning_summary_text.done", **_SUMMARY, text=_STR),
        _spec("response.reasoning_text.delta", **_PART, delta=_STR),
        _spec("response.reasoning_text.done", **_PART, text=_STR),
        *(_spec(t, **_ITEM) for t in HOSTED_STATUS_EVENTS),
        _spec("response.code_interpreter_call_code.delta", **_ITEM, delta=_STR),
        _spec("response.code_interpreter_call_code.done", **_ITEM, code=_STR),
        _spec("response.mcp_call_arguments.delta", **_ITEM, delta=_STR),
        _spec("response.mcp_call_arguments.done", **_ITEM, arguments=_STR),
        _spec(
            "response.image_generation_call.partial_image",
            **_ITEM,
            partial_image_b64=_STR,
            partial_image_index=_INT,
        ),
        _spec("response.shell_call_command.added", output_index=_INT, command_index=_INT),
        _spec("response.shell_call_command.delta", output_index=_INT, command_index=_INT),
        _spec("response.shell_call_command.done", output_index=_INT, command_index=_INT),
        _spec("response.shell_call_output_content.delta", **_ITEM, command_index=_INT),
        _spec("response.shell_call_output_content.done", **_ITEM, command_index=_INT),
        # `error` carries sequence_number only when it belongs to a running response.
        EventSpec("error", {"error": _OBJ}),
    )
}

# Required members of the Response object (OpenAPI `Response`, PROTOCOL.md §3.4).
RESPONSE_REQUIRED: Final[Mapping[str, tuple[type, ...]]] = {
    "id": _STR,
    "object": _STR,
    "created_at": (int, float),
    "model": _STR,
    "output": _LIST,
    "error": _OBJ_OR_NULL,
    "incomplete_details": _OBJ_OR_NULL,
    "instructions": (str, list, type(None)),
    "metadata": _OBJ_OR_NULL,
    "parallel_tool_calls": (bool,),
    "temperature": (int, float, type(None)),
    "top_p": (int, float, type(None)),
    "tool_choice": (str, dict),
    "tools": _LIST,
}


def tool_usage_zero() -> dict[str, Any]:
    """`tool_usage` of a response that ran no hosted tool (as api.openai.com reports it)."""
    tokens = {"image_tokens": 0, "text_tokens": 0}
    return {
        "image_gen": {
            "input_tokens": 0,
            "input_tokens_details": dict(tokens),
            "output_tokens": 0,
            "output_tokens_details": dict(tokens),
            "total_tokens": 0,
        },
        "web_search": {"num_requests": 0},
    }


def response_object(
    response_id: str, model: str, *, created_at: int, **fields: Any
) -> dict[str, Any]:
    """A Response with every member production sends (PRODUCTION_MEMBERS) at its neutral value.

    `fields` add or override members; the one place the object's baseline shape is written.
    The members beyond the OpenAPI-required ones are those every recorded api.openai.com
    Response carries (PROTOCOL.md §3.4; tests/reference_server/test_response_object.py derives
    them from the recorded corpus, so a member the API adds shows up as a failing test).
    """
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "background": False,
        "completed_at": None,
        "error": None,
        "frequency_penalty": 0,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": model,
        "moderation": None,
        "output": [],
        "parallel_tool_calls": True,
        "presence_penalty": 0,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "prompt_cache_retention": "in_memory",
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tool_usage": tool_usage_zero(),
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
        **fields,
    }


#: The members every api.openai.com Response carries today (PROTOCOL.md §3.4).
PRODUCTION_MEMBERS: Final = frozenset(response_object("resp_0", "m", created_at=0))


ERROR_PAYLOAD_REQUIRED: Final[Mapping[str, tuple[type, ...]]] = {
    "type": _STR,
    "code": _STR_OR_NULL,
    "message": _STR,
    "param": _STR_OR_NULL,
}

# Item types whose event grammar wsmode checks strictly (PROTOCOL.md §9: others leniently).
STRICT_ITEM_TYPES: Final = frozenset({"message", "function_call", "reasoning"})


def missing_fields(
    payload: Mapping[str, Any], required: Mapping[str, tuple[type, ...]]
) -> list[str]:
    """Names of required members that are absent or of the wrong JSON kind, as readable text."""
    problems: list[str] = []
    for name, kinds in required.items():
        if name not in payload:
            problems.append(f"missing '{name}'")
        elif not isinstance(payload[name], kinds) or (
            isinstance(payload[name], bool) and bool not in kinds
        ):
            problems.append(f"'{name}' has the wrong type")
    return problems


def is_terminal(event: Mapping[str, Any]) -> bool:
    return event.get("type") in TERMINAL_TYPES


def reached_output_cap(response: Mapping[str, Any] | None) -> bool:
    """A Response that ended `incomplete` because it reached its `max_output_tokens`: what a
    capped create asked for (a model that would not stop on its own still answered)."""
    if not isinstance(response, Mapping):
        return False
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    return response.get("status") == "incomplete" and reason == "max_output_tokens"
