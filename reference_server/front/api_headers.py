"""The response headers api.openai.com puts on every answer (PROTOCOL.md §1.2).

`x-request-id` names the request (openai-python reads it into `_request_id`, and support asks
for it); `openai-processing-ms` is the server's time from the request's arrival to the answer's
head; `x-ratelimit-*` state the account's request and token budgets. The reference server
enforces no budget, so it states its configured figures with nothing spent ([I]: the remaining
equals the limit and the reset is `0s`), which a client that paces itself on them reads as
"no pressure". The same set goes on HTTP answers, errors included, and on the WebSocket
upgrade's 101 and its refusals.
"""

from __future__ import annotations

import secrets
import time
from typing import Final

RATE_LIMIT_REQUESTS: Final = 10_000  # per minute [I]: a tier-5 account's order of magnitude
RATE_LIMIT_TOKENS: Final = 30_000_000  # per minute [I]


def new_request_id() -> str:
    """`req_` and 32 hex digits, the API's shape."""
    return "req_" + secrets.token_hex(16)


def api_headers(started_at: float, request_id: str | None = None) -> list[tuple[str, str]]:
    """The headers of one answer; `started_at` is the request's `perf_counter()` arrival."""
    processing_ms = max(0, round((time.perf_counter() - started_at) * 1000))
    return [
        ("x-request-id", request_id or new_request_id()),
        ("openai-processing-ms", str(processing_ms)),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", str(RATE_LIMIT_REQUESTS)),
        ("x-ratelimit-limit-tokens", str(RATE_LIMIT_TOKENS)),
        ("x-ratelimit-remaining-requests", str(RATE_LIMIT_REQUESTS)),
        ("x-ratelimit-remaining-tokens", str(RATE_LIMIT_TOKENS)),
        ("x-ratelimit-reset-requests", "0s"),
        ("x-ratelimit-reset-tokens", "0s"),
    ]
