"""Client events: parsing a `response.create` (WS frame or HTTP body) into a typed request.

Field rules follow PROTOCOL.md §2.1: body fields sit flat beside `type`; `stream` is accepted and
ignored over WebSocket; `background:true` is refused there; unknown fields (`client_metadata`, ...)
are tolerated; `generate:false` asks for a warm-up; `input: []` is fine with a previous id;
`multi_agent: {enabled, max_concurrent_subagents}` is checked here (§2.2; whether a server runs
it is the server's business). The beta client events themselves are parsed in `beta.py`.
Item-level validation is the server pipeline's job (it is incremental); this module checks the
request's own shape and raises `InvalidRequest` carrying the protocol error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.errors import ProtocolError
from harness.protocol import errors
from harness.protocol.errors import ApiError
from harness.protocol.extension import EXTENSION_FIELD  # scripted output and a seed

Transport = Literal["ws", "http"]

STREAM_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")
CLIENT_EVENT_TYPES = frozenset({"response.create"})
_TOOL_CHOICE_MODES = frozenset({"auto", "none", "required"})


class InvalidRequest(ProtocolError):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True, slots=True)
class CreateRequest:
    model: str
    input: tuple[dict[str, Any], ...]
    instructions: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    store: bool = True
    generate: bool = True
    stream: bool = False
    max_output_tokens: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    reasoning_effort: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    stream_id: str | None = None
    include_obfuscation: bool = True
    # Echoed in the Response as the request implies them (PROTOCOL.md §3.4); the engine does not
    # sample, so they change no output.
    reasoning_summary: str | None = None
    presence_penalty: float = 0
    frequency_penalty: float = 0
    top_logprobs: int = 0
    max_tool_calls: int | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    service_tier: str | None = None
    truncation: str = "disabled"
    text: dict[str, Any] = field(default_factory=dict)  # the `text` config as sent
    user: str | None = None
    script: tuple[dict[str, Any], ...] | None = None  # wsmode extension: dictated output
    seed: int | None = None  # wsmode extension
    multi_agent: bool = False  # `multi_agent.enabled` (beta, PROTOCOL.md §2.2)
    max_concurrent_subagents: int | None = None
    compaction: bool = False  # `context_management` asks for compaction: no steering (§2.2)
    background: bool = False  # `background: true` (refused over WebSocket, PROTOCOL.md §2.1)


def _fail(message: str, param: str | None, code: str | None = None) -> InvalidRequest:
    return InvalidRequest(errors.invalid_request(message, param=param, code=code))


def normalize_input(value: Any) -> tuple[dict[str, Any], ...]:
    """`input` as a tuple of item dicts: a bare string is one user message."""
    if value is None:
        return ()
    if isinstance(value, str):
        return ({"type": "message", "role": "user", "content": value},)
    if not isinstance(value, list):
        raise _fail(
            "Invalid type for 'input': expected a string or an array.", "input", "invalid_type"
        )
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise _fail(
                f"Invalid type for 'input[{index}]': expected an object.",
                f"input[{index}]",
                "invalid_type",
            )
    return tuple(value)


def _tools(value: Any) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
    for index, tool in enumerate(value):
        param = f"tools[{index}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise _fail(
                f"Invalid value for '{param}': expected a tool object with a 'type'.", param
            )
        if tool["type"] == "function":
            name = tool.get("name")
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
                raise _fail(
                    f"Invalid value for '{param}.name': a function name is required.",
                    f"{param}.name",
                )
            parameters = tool.get("parameters")
            if parameters is not None and not isinstance(parameters, dict):
                raise _fail(
                    f"Invalid type for '{param}.parameters': expected an object.",
                    f"{param}.parameters",
                )
    return tuple(value)


def _tool_choice(value: Any, tools: tuple[dict[str, Any], ...]) -> str | dict[str, Any]:
    if value is None:
        return "auto"
    if isinstance(value, str):
        if value not in _TOOL_CHOICE_MODES:
            raise _fail(f"Invalid value for 'tool_choice': '{value[:64]}'.", "tool_choice")
        return value
    if isinstance(value, dict) and value.get("type") == "function":
        names = {t.get("name") for t in tools if t.get("type") == "function"}
        if value.get("name") not in names:
            raise _fail(
                "Invalid value for 'tool_choice': no function tool with that name in 'tools'.",
                "tool_choice",
            )
        return value
    raise _fail("Invalid value for 'tool_choice'.", "tool_choice")


# The optional fields whose whole check is their JSON type, in the order they are checked.
_TYPED_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "previous_response_id": ((str,), "a string"),
    "generate": ((bool,), "a boolean"),
    "reasoning": ((dict,), "an object"),
    "stream_options": ((dict,), "an object"),
    EXTENSION_FIELD: ((dict,), "an object"),
    "parallel_tool_calls": ((bool,), "a boolean"),
    "store": ((bool,), "a boolean"),
    "max_output_tokens": ((int,), "an integer"),
    "metadata": ((dict,), "an object"),
    "temperature": ((int, float), "a number"),
    "top_p": ((int, float), "a number"),
    "multi_agent": ((dict,), "an object"),
    "presence_penalty": ((int, float), "a number"),
    "frequency_penalty": ((int, float), "a number"),
    "top_logprobs": ((int,), "an integer"),
    "max_tool_calls": ((int,), "an integer"),
    "safety_identifier": ((str,), "a string"),
    "prompt_cache_key": ((str,), "a string"),
    "user": ((str,), "a string"),
    "text": ((dict,), "an object"),
}
# The optional fields with a closed set of values (openai-python 3.57 `ResponseCreateParams`).
_ENUM_FIELDS: dict[str, tuple[str, ...]] = {
    "truncation": ("auto", "disabled"),
    "service_tier": ("auto", "default", "flex", "scale", "priority", "fast", "ultrafast"),
    "prompt_cache_retention": ("in_memory", "24h"),
}
_REASONING_SUMMARIES = ("auto", "concise", "detailed")
_VERBOSITIES = ("low", "medium", "high")
_TEXT_FORMATS = ("text", "json_object", "json_schema")


def parse_create(body: Mapping[str, Any], *, transport: Transport) -> CreateRequest:
    """Validate one `response.create` payload (WS frame without `type`, or HTTP body)."""
    model = _model(body, transport)
    for name, (kinds, what) in _TYPED_FIELDS.items():  # one pass; absent fields cost a lookup
        value = body.get(name)
        if value is not None and (
            not isinstance(value, kinds) or (type(value) is bool and bool not in kinds)
        ):
            raise _fail(f"Invalid type for '{name}': expected {what}.", name, "invalid_type")
    previous = body.get("previous_response_id")
    _conversation(body.get("conversation"), previous)
    if previous == "":
        raise _fail(
            "Invalid 'previous_response_id': expected a response id, got an empty string.",
            "previous_response_id",
            "invalid_value",
        )
    items = normalize_input(body.get("input"))
    generate = body.get("generate")
    if not items and previous is None and generate is not False:
        raise _fail("Missing required parameter: 'input'.", "input", "missing_required_parameter")
    reasoning = body.get("reasoning") or {}
    stream_options = body.get("stream_options") or {}
    script, seed = _extension(body)
    multi_agent, max_subagents = _multi_agent(body)
    tools = _tools(body.get("tools"))
    for name, allowed in _ENUM_FIELDS.items():
        _enum(body.get(name), name, allowed)
    _enum(reasoning.get("summary"), "reasoning.summary", _REASONING_SUMMARIES)
    return CreateRequest(
        model=model,
        input=items,
        instructions=_instructions(body),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        previous_response_id=previous,
        store=body.get("store") is not False,
        generate=generate is not False,
        stream=bool(body.get("stream")),
        max_output_tokens=_max_output_tokens(body),
        metadata=_metadata(body),
        reasoning_effort=reasoning.get("effort")
        if isinstance(reasoning.get("effort"), str)
        else None,
        temperature=_finite_number(body, "temperature"),
        top_p=_finite_number(body, "top_p"),
        stream_id=_stream_id(body),
        include_obfuscation=stream_options.get("include_obfuscation") is not False,
        reasoning_summary=reasoning.get("summary"),
        presence_penalty=_penalty(body, "presence_penalty"),
        frequency_penalty=_penalty(body, "frequency_penalty"),
        top_logprobs=_bounded_int(body, "top_logprobs", 0, 20) or 0,
        max_tool_calls=_bounded_int(body, "max_tool_calls", 1, None),
        safety_identifier=body.get("safety_identifier"),
        prompt_cache_key=body.get("prompt_cache_key"),
        prompt_cache_retention=body.get("prompt_cache_retention"),
        service_tier=body.get("service_tier"),
        truncation=body.get("truncation") or "disabled",
        text=_text_config(body.get("text")),
        user=body.get("user"),
        script=script,
        seed=seed,
        multi_agent=multi_agent,
        max_concurrent_subagents=max_subagents,
        background=body.get("background") is True,
        compaction=_context_management(body.get("context_management")),
    )


# What `POST /v1/responses/compact` takes (openai-python 3.57 `ResponseCompactParams`).
COMPACT_FIELDS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "service_tier",
        "image",
    }
)


def parse_compact(body: Mapping[str, Any]) -> CreateRequest:
    """A compaction request as the create it compacts: `model` required, `input` and/or
    `previous_response_id`; other members are tolerated and play no part (PROTOCOL.md §5.1)."""
    return parse_create(
        {k: v for k, v in body.items() if k in COMPACT_FIELDS} | {"store": False},
        transport="http",
    )


def _model(body: Mapping[str, Any], transport: Transport) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _fail("Missing required parameter: 'model'.", "model", "missing_required_parameter")
    if transport == "ws" and body.get("background"):
        raise _fail(
            "Background mode is not supported over WebSocket.",
            "background",
            "unsupported_parameter",
        )
    return model


def _stream_id(body: Mapping[str, Any]) -> str | None:
    stream_id = body.get("stream_id")
    if stream_id is not None and (
        not isinstance(stream_id, str) or not STREAM_ID_PATTERN.match(stream_id)
    ):
        raise _fail(
            "Invalid 'stream_id': expected 1-256 characters of A-Z, a-z, 0-9, '_', '.', '-'.",
            "stream_id",
            "invalid_stream_id",
        )
    return stream_id


# The API refuses a smaller cap (PROTOCOL.md §2.1: `integer_below_min_value`, seen from
# api.openai.com and Azure alike).
MIN_MAX_OUTPUT_TOKENS = 16


def _max_output_tokens(body: Mapping[str, Any]) -> int | None:
    max_output: int | None = body.get("max_output_tokens")  # its type is checked
    if max_output is not None and max_output < MIN_MAX_OUTPUT_TOKENS:
        raise _fail(
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= "
            f"{MIN_MAX_OUTPUT_TOKENS}, but got {max_output} instead.",
            "max_output_tokens",
            "integer_below_min_value",
        )
    return max_output


def _context_management(value: Any) -> bool:
    """`context_management: [{type, compact_threshold?}]` (openai-python 3.57
    `ContextManagement`: "Currently only 'compaction' is supported"); True when it asks for
    compaction."""
    if value is None:
        return False
    if not isinstance(value, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("type"), str) for entry in value
    ):
        raise _fail(
            "Invalid type for 'context_management': expected an array of objects with a 'type'.",
            "context_management",
            "invalid_type",
        )
    for index, entry in enumerate(value):
        _enum(entry["type"], f"context_management[{index}].type", ("compaction",))
        threshold = entry.get("compact_threshold")
        if threshold is not None and (type(threshold) is not int or threshold < 1):
            raise _fail(
                f"Invalid 'context_management[{index}].compact_threshold': expected a positive "
                "integer.",
                f"context_management[{index}].compact_threshold",
                "invalid_value",
            )
    return bool(value)


def _conversation(value: Any, previous: Any) -> None:
    """`conversation` is refused, never ignored (PROTOCOL.md §2.1): with previous_response_id
    the two "cannot be used in conjunction" (openai-python's own docstring); alone it names a
    conversation this server cannot hold, as it serves no Conversations API, so it is not
    found, as an unknown id is."""
    if value is None:
        return
    conversation_id = value.get("id") if isinstance(value, dict) else value
    if not isinstance(conversation_id, str) or not conversation_id:
        raise _fail(
            "Invalid type for 'conversation': expected a conversation id or an object {'id': ...}.",
            "conversation",
            "invalid_type",
        )
    if previous is not None:
        raise _fail(
            "'previous_response_id' cannot be used in conjunction with 'conversation'.",
            "previous_response_id",
            "invalid_value",
        )
    raise InvalidRequest(
        ApiError(
            404,
            "invalid_request_error",
            "not_found",
            f"Conversation with id '{conversation_id[:64]}' not found.",
            "conversation",
        )
    )


def _metadata(body: Mapping[str, Any]) -> dict[str, str]:
    metadata = body.get("metadata")  # its type is checked
    if not metadata:
        return {}
    if len(metadata) > 16 or not all(
        isinstance(k, str) and isinstance(v, str) and len(k) <= 64 and len(v) <= 512
        for k, v in metadata.items()
    ):
        raise _fail(
            "Invalid 'metadata': at most 16 string pairs (keys <= 64, values <= 512 chars).",
            "metadata",
        )
    return dict(metadata)


def _extension(body: Mapping[str, Any]) -> tuple[tuple[dict[str, Any], ...] | None, int | None]:
    """The `wsmode` extension: (script, seed)."""
    extension = body.get(EXTENSION_FIELD)  # its type is checked
    if not extension:
        return None, None
    script = extension.get("script")
    if script is not None and not (
        isinstance(script, list) and all(isinstance(s, dict) for s in script)
    ):
        raise _fail(
            "Invalid 'wsmode.script': expected an array of output item objects.", "wsmode.script"
        )
    seed = extension.get("seed")
    return (
        tuple(script) if script is not None else None,
        seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def _multi_agent(body: Mapping[str, Any]) -> tuple[bool, int | None]:
    """`multi_agent: {enabled: bool, max_concurrent_subagents?: int >= 1 | null}`."""
    value = body.get("multi_agent")  # its type is checked
    if value is None:
        return False, None
    enabled = value.get("enabled")
    if type(enabled) is not bool:
        raise _fail(
            "Missing required parameter: 'multi_agent.enabled' (a boolean).",
            "multi_agent.enabled",
            "missing_required_parameter",
        )
    limit = value.get("max_concurrent_subagents")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise _fail(
            "Invalid 'multi_agent.max_concurrent_subagents': expected an integer >= 1.",
            "multi_agent.max_concurrent_subagents",
            "invalid_value",
        )
    return enabled, limit


def _instructions(body: Mapping[str, Any]) -> str | None:
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _fail(
            "Invalid type for 'instructions': expected a string.", "instructions", "invalid_type"
        )
    return instructions


def _finite_number(body: Mapping[str, Any], name: str) -> float | None:
    """A number field; NaN and infinities are refused (a body may come from a lax parser)."""
    value: float | None = body.get(name)  # its type is checked
    if value is not None and not math.isfinite(value):
        raise _fail(f"Invalid value for '{name}': expected a finite number.", name, "invalid_value")
    return value


def _enum(value: Any, name: str, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        shown = value[:64] if isinstance(value, str) else value
        raise _fail(
            f"Invalid value for '{name}': {shown!r}. Supported values are: "
            + ", ".join(repr(a) for a in allowed)
            + ".",
            name,
            "invalid_value",
        )


def _penalty(body: Mapping[str, Any], name: str) -> float:
    value = _finite_number(body, name)
    if value is not None and not -2 <= value <= 2:
        raise _fail(f"Invalid '{name}': expected a number between -2 and 2.", name, "invalid_value")
    return value if value is not None else 0


def _bounded_int(body: Mapping[str, Any], name: str, low: int, high: int | None) -> int | None:
    value: int | None = body.get(name)  # its type is checked
    if value is not None and (value < low or (high is not None and value > high)):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise _fail(f"Invalid '{name}': expected an integer {bound}.", name, "invalid_value")
    return value


def _text_config(text: dict[str, Any] | None) -> dict[str, Any]:
    """The `text` config (its type is checked): a known format type and verbosity."""
    if not text:
        return {}
    fmt = text.get("format")
    if fmt is not None:
        if not isinstance(fmt, dict):
            raise _fail("Invalid type for 'text.format': expected an object.", "text.format")
        _enum(fmt.get("type"), "text.format.type", _TEXT_FORMATS)
        if fmt.get("type") is None:
            raise _fail(
                "Missing required parameter: 'text.format.type'.",
                "text.format.type",
                "missing_required_parameter",
            )
        if fmt["type"] == "json_schema":
            for key, kind, what in (("name", str, "a string"), ("schema", dict, "an object")):
                if not isinstance(fmt.get(key), kind):
                    raise _fail(
                        f"Missing required parameter: 'text.format.{key}' ({what}).",
                        f"text.format.{key}",
                        "missing_required_parameter",
                    )
    _enum(text.get("verbosity"), "text.verbosity", _VERBOSITIES)
    return dict(text)


def parse_client_event(
    message: Any, accepted: frozenset[str] = CLIENT_EVENT_TYPES
) -> tuple[str, dict[str, Any]]:
    """Split a decoded WS frame into (type, body); refuses a type outside `accepted` (a server
    adds the beta events it serves, `beta.BETA_CLIENT_EVENT_TYPES`)."""
    if not isinstance(message, dict):
        raise InvalidRequest(
            errors.invalid_request("Expected a JSON object.", code="invalid_event")
        )
    event_type = message.get("type")
    if not isinstance(event_type, str):
        raise _fail("Missing required parameter: 'type'.", "type", "missing_required_parameter")
    if event_type not in accepted:
        raise InvalidRequest(errors.unsupported_event_type(event_type))
    body = {k: v for k, v in message.items() if k != "type"}
    return event_type, body


def create_event(**fields: Any) -> dict[str, Any]:
    """A `response.create` client event: fields flat beside `type` (what clients send)."""
    return {"type": "response.create", **{k: v for k, v in fields.items() if v is not None}}
