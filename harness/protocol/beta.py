"""The 2026 beta extensions of WebSocket mode: steering and multi-agent injection (§2.2).

Two client events, both beta and both optional for a server:

- `response.steer {previous_response_id, input}` queues user input (text, images, files) for a
  continuation of a running response; the server answers `response.steer.accepted` (it owns the
  input now), later `response.steer.pending` (the response stopped for client-owned tool output;
  the input waits for the explicit continuation) or `response.steer.failed` (the input comes back).
- `response.inject {response_id, input}` (`OpenAI-Beta: responses_multi_agent=v1`) commits
  client-owned tool outputs into a running multi-agent response, "validated and committed
  atomically": `response.inject.created`, or `response.inject.failed` returning the uncommitted
  input with an `error`. Multi-agent events and items may carry `agent: {agent_name}`.

Sources: openai-python 3.57 (`types/beta/beta_response_steer_*`, `beta_response_inject_*`,
`beta_responses_server_event.py`, `resources/beta/responses` `.response.steer/.inject`) and the
openai-client-base 0.16 types of the same schemas. This module is the protocol core's one
definition of them: the replies' required fields (`BETA_EVENT_TYPES`, rule `beta.schema`), their
nested shapes (`beta_problems`), the response a reply is about (`beta_target`), the agent tag
(`agent_name`) and the parsing of the two client events (`parse_steer`, `parse_inject`). Whether
a server may answer with them at all is the conformance profile's business (`capabilities`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from harness.protocol import errors
from harness.protocol.events import EventSpec, missing_fields
from harness.protocol.requests import InvalidRequest

STEER = "response.steer"
INJECT = "response.inject"
BETA_CLIENT_EVENT_TYPES: Final = frozenset({STEER, INJECT})
MULTI_AGENT_BETA_HEADER: Final = ("OpenAI-Beta", "responses_multi_agent=v1")

_INT = (int,)
_STR = (str,)
_OBJ = (dict,)
_LIST = (list,)

# The server's replies to the two client events (openai-python 3.57 beta server event union).
BETA_EVENT_TYPES: Final[Mapping[str, EventSpec]] = {
    spec.name: spec
    for spec in (
        EventSpec("response.steer.accepted", {"sequence_number": _INT, "steer": _OBJ}),
        EventSpec(
            "response.steer.pending",
            {"sequence_number": _INT, "reason": _STR, "required_input": _LIST, "steer": _OBJ},
        ),
        EventSpec("response.steer.failed", {"sequence_number": _INT, "error": _OBJ, "steer": _OBJ}),
        EventSpec("response.inject.created", {"sequence_number": _INT, "response_id": _STR}),
        EventSpec(
            "response.inject.failed",
            {"sequence_number": _INT, "response_id": _STR, "input": _LIST, "error": _OBJ},
        ),
    )
}

# Codes the SDK types (failed events); clients must accept others, so they are not enforced.
STEER_ERROR_CODES: Final = frozenset(
    {
        "response_not_found",
        "invalid_input",
        "steering_not_supported",
        "too_many_pending_steers",
        "response_already_completed",
        "response_not_active",
        "successor_creation_failed",
    }
)
INJECT_ERROR_CODES: Final = frozenset({"response_already_completed", "response_not_found"})
STEER_PENDING_REASON: Final = "waiting_for_required_input"
STEERED: Final = "steered"  # incomplete_details.reason of a response ended by a steer
STEER_PARTS: Final = frozenset({"input_text", "input_image", "input_file"})


def is_beta_event(event: Mapping[str, Any]) -> bool:
    return event.get("type") in BETA_EVENT_TYPES


def agent_name(value: object) -> str | None:
    """The `agent.agent_name` of an event, item or Response; None when it carries no tag."""
    if not isinstance(value, Mapping):
        return None
    agent = value.get("agent")
    name = agent.get("agent_name") if isinstance(agent, Mapping) else None
    return name if isinstance(name, str) else None


def agent_tag(name: str) -> dict[str, str]:
    return {"agent_name": name}


def beta_target(event: Mapping[str, Any]) -> str | None:
    """The id of the response a reply is about: the steered one, or the injection's target."""
    if str(event.get("type", "")).startswith("response.steer."):
        steer = event.get("steer")
        target = steer.get("previous_response_id") if isinstance(steer, Mapping) else None
    else:
        target = event.get("response_id")
    return target if isinstance(target, str) else None


def beta_problems(event: Mapping[str, Any]) -> list[str]:
    """What a beta reply lacks against the SDK's model, as readable text (empty: well formed)."""
    event_type = str(event.get("type"))
    spec = BETA_EVENT_TYPES.get(event_type)
    if spec is None:
        return []
    problems = missing_fields(event, spec.required)
    steer = event.get("steer")
    if isinstance(steer, Mapping):
        if not isinstance(steer.get("previous_response_id"), str):
            problems.append("'steer.previous_response_id' missing or not a string")
        has_id = isinstance(steer.get("id"), str)
        if event_type != "response.steer.failed" and not has_id:
            problems.append("'steer.id' missing or not a string")
        if event_type == "response.steer.failed":
            if "id" in steer and steer["id"] is not None and not has_id:
                problems.append("'steer.id' is not a string")
            if not isinstance(steer.get("input"), (str, list)):
                problems.append("'steer.input' (the returned input) missing")
    error = event.get("error")
    if isinstance(error, Mapping):
        for name in ("code", "message"):
            if not isinstance(error.get(name), str):
                problems.append(f"'error.{name}' missing or not a string")
        if event_type == "response.steer.failed" and error.get("type") != "invalid_request_error":
            problems.append("'error.type' is not 'invalid_request_error'")
    required = event.get("required_input")
    if isinstance(required, list) and not all(
        isinstance(stub, Mapping) and isinstance(stub.get("type"), str) for stub in required
    ):
        problems.append("'required_input' holds a stub without a 'type'")
    return problems


# -- the client events ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SteerRequest:
    previous_response_id: str
    items: tuple[dict[str, Any], ...]  # the input as user messages (a string becomes one)
    raw_input: Any  # as sent: what a failure returns


class InvalidSteerInput(InvalidRequest):
    """The steer names its target but its input cannot be queued (`invalid_input`)."""

    def __init__(self, message: str, previous_response_id: str, raw_input: Any) -> None:
        super().__init__(errors.invalid_request(message, param="input", code="invalid_input"))
        self.previous_response_id = previous_response_id
        self.raw_input = raw_input


@dataclass(frozen=True, slots=True)
class InjectRequest:
    response_id: str
    items: tuple[Any, ...]  # as sent: the server validates them, a failure returns them


def _target(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(
            errors.invalid_request(
                f"Missing required parameter: '{name}'.",
                param=name,
                code="missing_required_parameter",
            )
        )
    return value


def parse_steer(body: Mapping[str, Any]) -> SteerRequest:
    """A `response.steer` without its `type`. No target: InvalidRequest (an `error` event, since
    `steer.failed` must name it); a bad input: InvalidSteerInput (`steer.failed invalid_input`)."""
    target = _target(body, "previous_response_id")
    raw = body.get("input")
    extra = sorted(set(body) - {"previous_response_id", "input"})
    if extra:
        raise InvalidSteerInput(
            f"Unknown parameter(s) {', '.join(extra)}: a steer takes only previous_response_id "
            "and input (its lane is the target's).",
            target,
            raw,
        )
    if isinstance(raw, str):
        if not raw:
            raise InvalidSteerInput("Invalid 'input': an empty string.", target, raw)
        return SteerRequest(target, ({"type": "message", "role": "user", "content": raw},), raw)
    if not isinstance(raw, list) or not raw:
        raise InvalidSteerInput(
            "Invalid 'input': expected a string or a non-empty array of user messages.", target, raw
        )
    items: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        problem = _steer_item_problem(item)
        if problem is not None:
            raise InvalidSteerInput(f"Invalid 'input[{index}]': {problem}", target, raw)
        items.append({"type": "message", "role": "user", "content": item["content"]})
    return SteerRequest(target, tuple(items), raw)


def _steer_item_problem(item: object) -> str | None:
    """Steering takes user messages of text, image and file parts only (SDK docstring)."""
    if not isinstance(item, Mapping):
        return "expected an object."
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return "steering accepts only messages with the 'user' role."
    extra = sorted(set(item) - {"type", "role", "content"})
    if extra:
        return f"a steering message takes only type, role and content, not {', '.join(extra)}."
    content = item.get("content")
    if isinstance(content, str):
        return None if content else "empty content."
    if not isinstance(content, list) or not content:
        return "content must be a string or a non-empty array of parts."
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in STEER_PARTS:
            return "content parts must be input_text, input_image or input_file."
    return None


def parse_inject(body: Mapping[str, Any]) -> InjectRequest:
    """A `response.inject` without its `type`; InvalidRequest when it names no target or its
    input is not an array (nothing a `response.inject.failed` could return). The items are the
    target's to validate: only the server knows which calls its response waits for."""
    target = _target(body, "response_id")
    raw = body.get("input")
    if not isinstance(raw, list):
        raise InvalidRequest(
            errors.invalid_request(
                "Invalid type for 'input': expected an array of input items.",
                param="input",
                code="invalid_type",
            )
        )
    return InjectRequest(target, tuple(raw))


def steer_event(
    steer_id: str | None, previous_response_id: str, raw_input: Any = None, *, failed: bool = False
) -> dict[str, Any]:
    """The `steer` member of a reply: a failure returns the input (and omits an unallocated id)."""
    steer: dict[str, Any] = {"previous_response_id": previous_response_id}
    if steer_id is not None:
        steer["id"] = steer_id
    if failed:
        steer["input"] = raw_input
    return steer
