"""The Response object's members by level (PROTOCOL.md §3.4), judged on a terminal Response.

The protocol core's `response.schema` checks that the OpenAPI-required members are present with
their JSON types. This module judges what a client relies on beyond presence, one rule per level:

* MUST (`response.member_values`), the required members' values: `object` is "response",
  `metadata` an object (`{}` when empty, never null), `error` null or `{code, message}` (set on
  a failed response), `incomplete_details` null or `{reason}` (set on an incomplete one);
* SHOULD (`response.usual_members`), the members every api.openai.com Response carries
  (`PRODUCTION_MEMBERS`, derived from recorded traffic: `background`, the penalties,
  `top_logprobs`, `max_tool_calls`, `safety_identifier`, ...; the Open Responses spec requires
  most of them), with the values the request implies: `status` a known status, `completed_at`
  Unix seconds once completed (else null), `store`, `previous_response_id` and the other
  echoed request fields as sent, `background` false over WebSocket, function tools echoed with
  `strict`;
* MAY (`response.optional_members`): `usage.input_tokens_details.cache_write_tokens`, which
  openai-python 3.57 types as required but most recorded api.openai.com responses omit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from harness.protocol.events import PRODUCTION_MEMBERS

STATUSES: Final = ("in_progress", "completed", "failed", "incomplete", "cancelled", "queued")
# Request fields the Response echoes as sent, with the value it carries when the request had none.
ECHOED: Final[Mapping[str, Any]] = {
    "max_output_tokens": None,
    "max_tool_calls": None,
    "top_logprobs": 0,
    "safety_identifier": None,
    "prompt_cache_key": None,
    "user": None,
}
MEMBER_RULES: Final = {
    "MUST": "response.member_values",
    "SHOULD": "response.usual_members",
    "MAY": "response.optional_members",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def value_problems(response: Mapping[str, Any]) -> Iterator[str]:
    """MUST: the required members' values."""
    # a member that is absent is 3.4.response.required-fields' finding (response.schema), not a
    # wrong value: judged here only when present, so one omission is not counted twice
    if "object" in response and response["object"] != "response":
        yield f"object is {response.get('object')!r}, not 'response'"
    if "metadata" in response and not isinstance(response["metadata"], Mapping):
        yield f"metadata is {response.get('metadata')!r}, not an object ({{}} when empty)"
    status, error = response.get("status"), response.get("error")
    if error is not None and not (
        isinstance(error, Mapping) and isinstance(error.get("message"), str) and "code" in error
    ):
        yield f"error is {error!r}, not null or {{code, message}}"
    if status == "failed" and "error" in response and error is None:
        yield "a failed response carries error null"
    details = response.get("incomplete_details")
    if details is not None and not (
        isinstance(details, Mapping) and isinstance(details.get("reason"), str)
    ):
        yield f"incomplete_details is {details!r}, not null or {{reason}}"
    if status == "incomplete" and "incomplete_details" in response and details is None:
        yield "an incomplete response carries incomplete_details null"


def usual_problems(response: Mapping[str, Any], request: Mapping[str, Any]) -> Iterator[str]:
    """SHOULD: the members production always sends, with values matching the request."""
    missing = sorted(PRODUCTION_MEMBERS - set(response))
    if missing:
        yield f"no {', '.join(missing)}"
    status = response.get("status")
    if "status" in response and status not in STATUSES:
        yield f"status is {status!r}"
    completed_at = response.get("completed_at")
    if "completed_at" in response:
        if status == "completed" and not _is_int(completed_at):
            yield f"completed, but completed_at is {completed_at!r}"
        elif status != "completed" and completed_at is not None:
            yield f"status {status!r} with completed_at {completed_at!r} (expected null)"
    if "store" in response and response["store"] is not bool(request.get("store", True)):
        yield f"store is {response['store']!r}, the request sent {request.get('store', True)!r}"
    if "background" in response and response["background"] is not False:
        yield f"background is {response['background']!r} on a foreground response"
    for name, default in {"previous_response_id": None, **ECHOED}.items():
        sent = request.get(name, default)
        if name in response and response[name] != (default if sent is None else sent):
            yield f"{name} is {response[name]!r}, the request sent {sent!r}"
    unstrict = [
        str(tool.get("name"))
        for tool in response.get("tools") or ()
        if isinstance(tool, Mapping) and tool.get("type") == "function" and "strict" not in tool
    ]
    if unstrict:
        yield f"function tools echoed without 'strict': {', '.join(unstrict)}"


def optional_problems(response: Mapping[str, Any]) -> Iterator[str]:
    """MAY: usage details openai-python 3.57 requires and production often leaves out."""
    usage = response.get("usage")
    details = usage.get("input_tokens_details") if isinstance(usage, Mapping) else None
    if isinstance(details, Mapping) and "cache_write_tokens" not in details:
        yield "usage.input_tokens_details has no cache_write_tokens"


def member_problems(
    level: str, response: Mapping[str, Any], request: Mapping[str, Any]
) -> list[str]:
    """The problems a terminal Response has at `level` (MUST / SHOULD / MAY)."""
    if level == "MUST":
        return list(value_problems(response))
    if level == "SHOULD":
        return list(usual_problems(response, request))
    return list(optional_problems(response))
