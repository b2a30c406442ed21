from __future__ import annotations

from typing import Any

import pytest

from harness.protocol.requests import InvalidRequest, parse_client_event, parse_create


def error_of(body: dict[str, Any], transport: str = "ws") -> tuple[str | None, str | None]:
    with pytest.raises(InvalidRequest) as info:
        parse_create(body, transport=transport)  # type: ignore[arg-type]
    return info.value.error.code, info.value.error.param


def test_flat_create_with_tolerated_and_ignored_fields() -> None:
    request = parse_create(
        {
            "model": "m",
            "input": "hi",
            "stream": True,
            "client_metadata": {"x": "y"},
            "store": False,
        },
        transport="ws",
    )
    assert request.input == ({"type": "message", "role": "user", "content": "hi"},)
    assert request.store is False and request.generate is True


def test_warmup_and_empty_continuation_are_accepted() -> None:
    assert (
        parse_create({"model": "m", "input": [], "generate": False}, transport="ws").generate
        is False
    )
    assert (
        parse_create(
            {"model": "m", "input": [], "previous_response_id": "resp_1"}, transport="ws"
        ).input
        == ()
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"input": "x"}, ("missing_required_parameter", "model")),
        ({"model": "m", "input": "x", "background": True}, ("unsupported_parameter", "background")),
        ({"model": "m"}, ("missing_required_parameter", "input")),
        ({"model": "m", "input": 3}, ("invalid_type", "input")),
        ({"model": "m", "input": "x", "stream_id": ""}, ("invalid_stream_id", "stream_id")),
        ({"model": "m", "input": "x", "stream_id": "a b"}, ("invalid_stream_id", "stream_id")),
        (
            {"model": "m", "input": "x", "max_output_tokens": 0},
            ("integer_below_min_value", "max_output_tokens"),
        ),
        (
            {"model": "m", "input": "x", "max_output_tokens": 15},
            ("integer_below_min_value", "max_output_tokens"),
        ),
        (
            {"model": "m", "input": "x", "conversation": "conv_1", "previous_response_id": "r"},
            ("invalid_value", "previous_response_id"),
        ),
        (
            {"model": "m", "input": "x", "conversation": {"id": "conv_1"}},
            ("not_found", "conversation"),
        ),
        ({"model": "m", "input": "x", "conversation": 3}, ("invalid_type", "conversation")),
        ({"model": "m", "input": "x", "tool_choice": "sometimes"}, (None, "tool_choice")),
        (
            {"model": "m", "input": "x", "tool_choice": {"type": "function", "name": "f"}},
            (None, "tool_choice"),
        ),
        ({"model": "m", "input": "x", "store": "yes"}, ("invalid_type", "store")),
    ],
)
def test_bad_requests_name_the_parameter(
    body: dict[str, Any], expected: tuple[str | None, str]
) -> None:
    assert error_of(body) == expected


_WRONG_TYPES = {
    "previous_response_id": 7,
    "generate": "no",
    "reasoning": "high",
    "stream_options": [],
    "wsmode": [],
    "parallel_tool_calls": 1,
    "store": "yes",
    "max_output_tokens": True,  # a bool is not an integer here
    "metadata": [],
    "temperature": True,
    "top_p": "1",
    "instructions": 5,
}


@pytest.mark.parametrize(("name", "value"), _WRONG_TYPES.items())
def test_a_field_of_the_wrong_type_is_refused_naming_it(name: str, value: Any) -> None:
    assert error_of({"model": "m", "input": "x", name: value}) == ("invalid_type", name)


def test_background_is_fine_over_http() -> None:
    assert (
        parse_create({"model": "m", "input": "x", "background": True}, transport="http").model
        == "m"
    )


@pytest.mark.parametrize("message", [[], "x", {"type": 3}, {"type": "response.cancel"}])
def test_client_event_errors(message: Any) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_client_event(message)
    assert info.value.error.status == 400


@pytest.mark.parametrize("name", ["temperature", "top_p"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_numbers_are_refused_naming_the_parameter(name: str, value: float) -> None:
    body = {"model": "m", "input": "hi", name: value}
    assert error_of(body) == ("invalid_value", name)


def test_an_empty_previous_response_id_is_refused() -> None:
    body = {"model": "m", "input": "hi", "previous_response_id": ""}
    assert error_of(body) == ("invalid_value", "previous_response_id")


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("presence_penalty", 3, "presence_penalty"),
        ("frequency_penalty", "0", "frequency_penalty"),
        ("top_logprobs", 21, "top_logprobs"),
        ("max_tool_calls", 0, "max_tool_calls"),
        ("truncation", "sometimes", "truncation"),
        ("service_tier", "gold", "service_tier"),
        ("prompt_cache_retention", "1y", "prompt_cache_retention"),
        ("safety_identifier", 7, "safety_identifier"),
        ("reasoning", {"summary": "long"}, "reasoning.summary"),
        ("text", {"format": {"type": "yaml"}}, "text.format.type"),
        ("text", {"format": {"type": "json_schema", "name": "x"}}, "text.format.schema"),
        ("text", {"verbosity": "loud"}, "text.verbosity"),
    ],
)
def test_echoed_request_fields_are_validated_with_their_param(
    field: str, value: Any, param: str
) -> None:
    assert error_of({"model": "m", "input": "hi", field: value})[1] == param


def test_echoed_request_fields_are_carried() -> None:
    request = parse_create(
        {"model": "m", "input": "hi", "top_logprobs": 2, "truncation": "auto", "user": "u"},
        transport="http",
    )
    assert (request.top_logprobs, request.truncation, request.user) == (2, "auto", "u")
    assert (request.presence_penalty, request.max_tool_calls, request.text) == (0, None, {})
