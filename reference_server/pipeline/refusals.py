"""Request-scoped refusals: the pipeline stops and no response is generated.

`RequestRefused` becomes a bare `error` event (PROTOCOL.md §4.1); `SafetyBlock` (flagged input)
surfaces instead as a failed response, `response.created` then `response.failed` (§3.3).
"""

from __future__ import annotations

from harness.errors import ProtocolError
from harness.protocol.errors import ApiError


class RequestRefused(ProtocolError):
    """A request-scoped error: no response was created; the caller sends `error`."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


class SafetyBlock(RequestRefused):
    """Flagged input: surfaces as a failed response (created, then failed), not a bare error.
    Its code is `invalid_prompt`, the one openai-python 3.57's `ResponseError` has for it."""

    def __init__(self, category: str, rule_ids: tuple[str, ...]) -> None:
        super().__init__(
            ApiError(
                400,
                "invalid_request_error",
                "invalid_prompt",
                "Invalid prompt: your prompt was flagged as potentially violating our usage "
                f"policy ({category}).",
                "input",
            )
        )
        self.rule_ids = rule_ids
