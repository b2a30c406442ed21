"""wsmode's extension namespace: the one key, `wsmode`, on both sides of a turn.

On a `response.create` it carries scripted output and a seed (`requests.parse_create` reads
them). On the terminal Response the reference server answers with its timing stamps: where the
turn's time went, as the server saw it. The server writes them
(`reference_server/pipeline/response.py`) as a :class:`ServerStamps`; the load client and the
server's own log line read them with :func:`read_server_stamps`. The official SDK ignores
unknown fields, so the stamps ride in the Response unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypedDict

EXTENSION_FIELD: Final = "wsmode"


class ServerStamps(TypedDict):
    """The `wsmode` object of a terminal Response, as the reference server writes it.

    "Receipt" is when the request's first bytes arrived (the kernel's receive stamp).
    """

    resolution: str  # previous_response_id: "hit", "hydrate" (protocol.cache.Resolution), "none"
    api_overhead_ms: float  # receipt to engine start
    inference_ttft_ms: float  # the simulated queue + prefill
    ttft_ms: float | None  # receipt to the write of the first content token (timing_marks)
    ttfe_ms: float | None  # receipt to the first output event
    stages_ms: dict[str, float]  # real + charged time per stage
    cached_tokens: int  # prompt tokens found in the prefix cache


@dataclass(frozen=True, slots=True)
class ReadStamps:
    """A Response's stamps as a client reads them: a field the server did not send, or sent
    malformed (a server under test may send anything), is None."""

    resolution: str | None
    api_overhead_ms: float | None
    inference_ttft_ms: float | None
    ttft_ms: float | None
    ttfe_ms: float | None
    stages_ms: dict[str, float] | None  # the well-formed stages only
    cached_tokens: int | None


def read_server_stamps(response: Mapping[str, Any]) -> ReadStamps | None:
    """The stamps of a Response; None when it carries no `wsmode` object."""
    stamps = response.get(EXTENSION_FIELD)
    if not isinstance(stamps, Mapping):
        return None
    stages = stamps.get("stages_ms")
    resolution = stamps.get("resolution")
    cached = stamps.get("cached_tokens")
    return ReadStamps(
        resolution=resolution if isinstance(resolution, str) else None,
        api_overhead_ms=_number(stamps.get("api_overhead_ms")),
        inference_ttft_ms=_number(stamps.get("inference_ttft_ms")),
        ttft_ms=_number(stamps.get("ttft_ms")),
        ttfe_ms=_number(stamps.get("ttfe_ms")),
        stages_ms=(
            {str(k): float(v) for k, v in stages.items() if _number(v) is not None}
            if isinstance(stages, Mapping)
            else None
        ),
        cached_tokens=cached if isinstance(cached, int) and not isinstance(cached, bool) else None,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
