"""The Response object's members by level (PROTOCOL.md §3.4), judged on a terminal Response.

The protocol core's `response.schema` checks that the OpenAPI-required members are present with
their JSON types. This module judges what a client relies on beyond presence, one rule per level:

* MUST (`response.member_values`), the required members' values: `object` is "response",
  `metadata` an object (`{}` when empty, never null), `error` null or `{code, message}` (set on
  a failed response), `incomplete_details` null or `{reason}` (set on an incomplete one);
* SHOULD (`response.usual_members`), members production always sends: `status` (a known
  status), `completed_at` (Unix seconds once completed, else null), `store` (the request's
  value), `previous_response_id` (the request's value, null when none);
* MAY (`response.optional_members`): `reasoning`, `text`, `truncation`, `service_tier`,
  `max_output_tokens`, `prompt_cache_key`, `user` present (null allowed).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

STATUSES: Final = ("in_progress", "completed", "failed", "incomplete", "cancelled", "queued")
OPTIONAL_MEMBERS: Final = (
    "reasoning",
    "text",
    "truncation",
    "service_tier",
    "max_output_tokens",
    "prompt_cache_key",
    "user",
)
MEMBER_RULES: Final = {
    "MUST": "response.member_values",
    "SHOULD": "response.usual_members",
    "MAY": "response.optional_members",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def value_problems(response: Mapping[str, Any]) -> Iterator[str]:
    """MUST: the required members' values."""
    if response.get("object") != "response":
        yield f"object is {response.get('object')!r}, not 'response'"
    if not isinstance(response.get("metadata"), Mapping):
        yield f"metadata is {response.get('metadata')!r}, not an object ({{}} when empty)"
    status, error = response.get("status"), response.get("error")
    if error is not None and not (
        isinstance(error, Mapping) and isinstance(error.get("message"), str) and "code" in error
    ):
        yield f"error is {error!r}, not null or {{code, message}}"
    if status == "failed" and error is None:
        yield "a failed response carries error null"
    details = response.get("incomplete_details")
    if details is not None and not (
        isinstance(details, Mapping) and isinstance(details.get("reason"), str)
    ):
        yield f"incomplete_details is {details!r}, not null or {{reason}}"
    if status == "incomplete" and details is None:
        yield "an incomplete response carries incomplete_details null"


def usual_problems(response: Mapping[str, Any], request: Mapping[str, Any]) -> Iterator[str]:
    """SHOULD: the members production always sends, with values matching the request."""
    status = response.get("status")
    if status not in STATUSES:
        yield f"status is {status!r}" if "status" in response else "no status"
    if "completed_at" not in response:
        yield "no completed_at"
    elif status == "completed" and not _is_int(response["completed_at"]):
        yield f"completed, but completed_at is {response['completed_at']!r}"
    elif status != "completed" and response["completed_at"] is not None:
        yield f"status {status!r} with completed_at {response['completed_at']!r} (expected null)"
    if "store" not in response:
        yield "no store"
    elif response["store"] is not bool(request.get("store", True)):
        yield f"store is {response['store']!r}, the request sent {request.get('store', True)!r}"
    if "previous_response_id" not in response:
        yield "no previous_response_id"
    elif response["previous_response_id"] != request.get("previous_response_id"):
        yield (
            f"previous_response_id is {response['previous_response_id']!r}, "
            f"the request sent {request.get('previous_response_id')!r}"
        )


def optional_problems(response: Mapping[str, Any]) -> Iterator[str]:
    """MAY: the other members §3.4 lists as usually present."""
    missing = [name for name in OPTIONAL_MEMBERS if name not in response]
    if missing:
        yield f"no {', '.join(missing)}"


def member_problems(
    level: str, response: Mapping[str, Any], request: Mapping[str, Any]
) -> list[str]:
    """The problems a terminal Response has at `level` (MUST / SHOULD / MAY)."""
    if level == "MUST":
        return list(value_problems(response))
    if level == "SHOULD":
        return list(usual_problems(response, request))
    return list(optional_problems(response))
