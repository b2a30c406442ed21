"""Errors of the protocol core, and the catalog of wire errors the protocol defines.

Exception tree (of the protocol family, harness.errors)::

    RuleBroken(ProtocolError)     a rule of the event grammar was broken (carries `rule_id`)
    ├── LocalProtocolError        we broke it: our own emitter produced an illegal event (a bug)
    └── RemoteProtocolError       the peer broke it: a server under test sent an illegal event

The wire `error` event is *not* an exception: it is a legal event, built by `ApiError.to_event()`
and parsed back with `ApiError.from_event()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import ProtocolError


class RuleBroken(ProtocolError):
    """A rule of the event grammar was broken; `rule_id` names it."""

    def __init__(self, rule_id: str, message: str) -> None:
        super().__init__(f"[{rule_id}] {message}")
        self.rule_id = rule_id
        self.detail = message


class LocalProtocolError(RuleBroken):
    """Our side produced an illegal event: always a bug in wsmode."""


class RemoteProtocolError(RuleBroken):
    """The peer produced an illegal event: a conformance failure of the peer."""


@dataclass(frozen=True, slots=True)
class ApiError:
    """One request-level or response-level error, in the shape of PROTOCOL.md §4.1."""

    status: int
    type: str
    code: str | None
    message: str
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The nested `error` payload (also the HTTP error body's `error` member)."""
        return {"type": self.type, "code": self.code, "message": self.message, "param": self.param}

    def to_event(
        self, *, sequence_number: int | None = None, stream_id: str | None = None
    ) -> dict[str, Any]:
        """The WebSocket/SSE `error` event: nested payload, HTTP-equivalent `status`."""
        event: dict[str, Any] = {"type": "error", "status": self.status}
        if sequence_number is not None:
            event["sequence_number"] = sequence_number
        if stream_id is not None:
            event["stream_id"] = stream_id
        error = self.body()
        if self.headers:
            error["headers"] = dict(self.headers)
        event["error"] = error
        return event

    def to_http_body(self) -> dict[str, Any]:
        return {"error": self.body()}

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> ApiError:
        """Read an `error` event, nested (production) or flat (the OpenAPI document's form)."""
        payload = event.get("error")
        source = payload if isinstance(payload, dict) else event
        status = event.get("status", event.get("status_code", 0))
        return cls(
            status=status if isinstance(status, int) else 0,
            type=str(source.get("type", "")),
            code=source.get("code") if isinstance(source.get("code"), str) else None,
            message=str(source.get("message", "")),
            param=source.get("param") if isinstance(source.get("param"), str) else None,
        )


# --- The catalog: one constructor per protocol error, so server and checker agree on shapes. ---


def invalid_request(message: str, *, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, "invalid_request_error", code, message, param)


def invalid_json(message: str, param: str | None = None, code: str = "invalid_json") -> ApiError:
    """A body or frame the wire parser refused (`param`: the field holding a bad number)."""
    return ApiError(400, "invalid_request_error", code, message, param)


def previous_response_not_found(response_id: str) -> ApiError:
    return ApiError(
        400,
        "invalid_request_error",
        "previous_response_not_found",
        f"Previous response with id '{_clip(response_id)}' not found.",
        "previous_response_id",
    )


def connection_limit_reached(lifetime_s: float) -> ApiError:
    minutes = lifetime_s / 60
    shown = f"{minutes:g} minutes" if minutes >= 1 else f"{lifetime_s:g} seconds"
    return ApiError(
        400,
        "invalid_request_error",
        "websocket_connection_limit_reached",
        f"Responses websocket connection limit reached ({shown}). "
        "Create a new websocket connection to continue.",
    )


def stream_limit_reached(stream_id: str, limit: int) -> ApiError:
    return invalid_request(
        f"Too many streams on this connection (limit {limit}). Reuse a stream_id or open a new "
        "connection.",
        param="stream_id",
        code="websocket_stream_limit_reached",
    )


def unsupported_event_type(event_type: str) -> ApiError:
    return invalid_request(
        f"Unsupported event type '{_clip(event_type)}'. Expected 'response.create'.",
        param="type",
        code="unknown_event_type",
    )


def queue_full(limit: int) -> ApiError:
    return ApiError(
        429,
        "rate_limit_error",
        "too_many_pending_responses",
        f"Too many responses queued on this connection (limit {limit}). "
        "Wait for a response to finish or open another connection.",
    )


def queue_bytes_full(limit_bytes: int) -> ApiError:
    """`queue_full` by size: the creates a connection has running or queued pass its byte bound."""
    return ApiError(
        429,
        "rate_limit_error",
        "too_many_pending_responses",
        f"Too many bytes of responses pending on this connection (limit {limit_bytes} bytes). "
        "Wait for a response to finish or open another connection.",
    )


def context_length_exceeded(tokens: int, limit: int) -> ApiError:
    return invalid_request(
        f"Your input exceeds the context window of this model ({tokens} tokens > {limit}). "
        "Please adjust your input and try again.",
        param="input",
        code="context_length_exceeded",
    )


def upgrade_required() -> ApiError:
    """A plain GET on the WebSocket path (PROTOCOL.md §1.1): the client must upgrade."""
    return ApiError(
        426,
        "invalid_request_error",
        "websocket_upgrade_required",
        "GET /v1/responses opens a WebSocket: send 'Upgrade: websocket' "
        "(POST /v1/responses serves HTTP).",
    )


def websocket_disabled() -> ApiError:
    """An upgrade to a server with WebSocket mode switched off (PROTOCOL.md §1.1) [I]: 426, the
    one status on which codex falls back to HTTP at once."""
    return ApiError(
        426,
        "invalid_request_error",
        "websocket_not_supported",
        "WebSocket mode is switched off on this server: use POST /v1/responses (HTTP/SSE).",
    )


def unauthorized() -> ApiError:
    return ApiError(
        401,
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key in your account settings.",
    )


def server_shutting_down(*, cut_after_s: float | None = None) -> ApiError:
    """A create that arrived while the server drains (SIGTERM): retry on a new connection.
    With `cut_after_s`: a response still running when the drain deadline (that many seconds; 0:
    a stop without a drain) passed was stopped."""
    message = "The server is shutting down and accepts no new responses; retry on a new connection."
    if cut_after_s is not None:
        deadline = f" at the {cut_after_s:g} s drain deadline" if cut_after_s else ""
        message = (
            f"The server is shutting down: the response in progress was stopped{deadline}; "
            "retry on a new connection."
        )
    return ApiError(503, "server_error", "server_shutting_down", message)


def server_error(
    message: str = "The server had an error while processing your request.",
) -> ApiError:
    return ApiError(500, "server_error", "server_error", message)


def _clip(text: str, limit: int = 256) -> str:
    return text[:limit].encode("ascii", "backslashreplace").decode("ascii")
