"""What a turn reports of its response: the ids it mints, the Response object (its fields,
usage, terminal events, `wsmode` extras), and how the decode ended (`Decoded`).

Ids (responses, items, calls, steers) are random from the OS, read in blocks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.protocol.cache import Resolution
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import ApiError
from harness.protocol.events import Event, response_object
from harness.protocol.extension import ServerStamps
from harness.protocol.requests import CreateRequest
from reference_server.engine.generation_plan import GenerationPlan
from reference_server.pipeline.outbox import Send


class _EntropyPool:
    """os.urandom read 4 KiB at a time: one syscall per 256 ids, not one per id (ids are
    minted several times a turn). Emptied in a forked child, so no two processes share bytes."""

    _READ_BYTES = 4096

    def __init__(self) -> None:
        self._buffer = b""
        self._offset = 0
        os.register_at_fork(after_in_child=self.empty)

    def empty(self) -> None:
        self._buffer, self._offset = b"", 0

    def take(self, count: int) -> bytes:
        if self._offset + count > len(self._buffer):
            self._buffer, self._offset = os.urandom(self._READ_BYTES), 0
        start = self._offset
        self._offset += count
        return self._buffer[start : self._offset]


_ENTROPY = _EntropyPool()


def new_id(prefix: str) -> str:
    """`prefix_` and 32 hex digits from the OS's CSPRNG (as secrets.token_hex(16))."""
    return f"{prefix}_{_ENTROPY.take(16).hex()}"


Status = Literal["completed", "incomplete", "failed"]


@dataclass(frozen=True, slots=True)
class Decoded:
    """How the engine stage's decode ended: what the terminal, its usage and stamps report."""

    status: Status  # completed, or incomplete (truncated, content filter, steered)
    first_output_at: float | None  # perf_counter() when the first output item began (TTFE)
    first_token_at: float | None = None  # perf_counter() at the first content token's write
    incomplete_reason: str | None = None  # when not the plan's (truncation / content filter)
    cut_at_tokens: int | None = None  # a steer ended it early: (output, reasoning) tokens sent
    cut_reasoning_tokens: int = 0


def new_response(
    request: CreateRequest, response_id: str, instructions: str | None
) -> dict[str, Any]:
    """The Response object as `response.created` announces it: every member production sends,
    with the value the request implies (PROTOCOL.md §3.4)."""
    return response_object(
        response_id,
        request.model,
        created_at=int(time.time()),
        instructions=instructions,
        metadata=dict(request.metadata),
        parallel_tool_calls=request.parallel_tool_calls,
        temperature=request.temperature if request.temperature is not None else 1.0,
        top_p=request.top_p if request.top_p is not None else 1.0,
        tool_choice=request.tool_choice,
        tools=[normalized_tool(tool) for tool in request.tools],
        previous_response_id=request.previous_response_id,
        store=request.store,
        max_output_tokens=request.max_output_tokens,
        max_tool_calls=request.max_tool_calls,
        presence_penalty=request.presence_penalty,
        frequency_penalty=request.frequency_penalty,
        top_logprobs=request.top_logprobs,
        safety_identifier=request.safety_identifier,
        prompt_cache_key=request.prompt_cache_key,
        prompt_cache_retention=request.prompt_cache_retention or "in_memory",
        reasoning={"effort": request.reasoning_effort, "summary": request.reasoning_summary},
        text=text_config(request.text),
        truncation=request.truncation,
        # "auto" resolves to the tier that ran the request (the recorded responses say "default")
        service_tier="default" if request.service_tier in (None, "auto") else request.service_tier,
        user=request.user,
        background=request.background,
    )


# What the API adds to a tool it echoes, by tool type, when the request left the member out
# (the values every recorded api.openai.com Response shows; PROTOCOL.md §3.4).
_TOOL_DEFAULTS: dict[str, dict[str, Any]] = {
    "function": {"description": None, "parameters": None, "strict": True},
    "custom": {"description": None, "format": {"type": "text"}},
    "web_search": {
        "filters": None,
        "search_context_size": "medium",
        "user_location": {
            "type": "approximate",
            "city": None,
            "country": "US",
            "region": None,
            "timezone": None,
        },
    },
    "file_search": {
        "filters": None,
        "max_num_results": 20,
        "ranking_options": {"ranker": "auto", "score_threshold": 0},
    },
    "mcp": {
        "allowed_tools": None,
        "headers": None,
        "require_approval": "always",
        "server_description": None,
    },
    "code_interpreter": {"container": {"type": "auto"}},
    "image_generation": {
        "background": "auto",
        "moderation": "auto",
        "n": 1,
        "output_compression": 100,
        "output_format": "png",
        "quality": "auto",
        "size": "auto",
    },
}


def normalized_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as the API echoes it: the request's members, plus the defaults it left out."""
    defaults = _TOOL_DEFAULTS.get(str(tool.get("type")))
    if defaults is None:
        return dict(tool)
    return {**defaults, **{k: v for k, v in tool.items() if v is not None or k not in defaults}}


def text_config(text: Mapping[str, Any]) -> dict[str, Any]:
    """The `text` member: the request's format (JSON schema members filled in) and verbosity."""
    fmt = dict(text.get("format") or {"type": "text"})
    if fmt.get("type") == "json_schema":
        fmt = {"description": None, "strict": False, **fmt}
    return {"format": fmt, "verbosity": text.get("verbosity") or "medium"}


async def fail_response(
    request: CreateRequest, error: ApiError, send: Send, *, obfuscate: bool = True
) -> dict[str, Any]:
    """An early failure: response.created then response.failed (PROTOCOL.md §3.3)."""
    emitter = ResponseEmitter(
        new_response(request, new_id("resp"), request.instructions),
        stream_id=request.stream_id,
        obfuscate=obfuscate,
    )
    events = emitter.failed(error)
    await send(*events)
    return dict(events[-1]["response"])


def usage(
    prompt_tokens: int,
    cached_tokens: int,
    cache_write_tokens: int,
    plan: GenerationPlan,
    decoded: Decoded | None = None,
) -> dict[str, Any]:
    """The terminal's usage: the plan's output, or what was sent before a steer cut it.
    `cache_write_tokens` are the prompt tokens this turn added to the engine's prefix cache
    (openai-python 3.57 types the member as required)."""
    output, reasoning = plan.output_tokens, plan.reasoning_tokens
    if decoded is not None and decoded.cut_at_tokens is not None:
        output, reasoning = decoded.cut_at_tokens, decoded.cut_reasoning_tokens
    return {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": cached_tokens,
            "cache_write_tokens": cache_write_tokens,
        },
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt_tokens + output,
    }


def terminal_events(
    emitter: ResponseEmitter, decoded: Decoded, plan: GenerationPlan, usage: dict[str, Any]
) -> list[Event]:
    """The events that end the response; the last one is the terminal event."""
    if decoded.status == "incomplete":
        reason = decoded.incomplete_reason or (
            "max_output_tokens" if plan.truncated else "content_filter"
        )
        return emitter.incomplete(reason, usage)
    return [emitter.completed(usage, completed_at=int(time.time()))]


def wsmode_report(
    *,
    resolution: Resolution | None,
    received_at: float,
    engine_start: float,
    decoded: Decoded,
    plan: GenerationPlan,
    stages_ms: dict[str, float],
    cached_tokens: int,
) -> ServerStamps:
    """The `wsmode` object of the terminal Response: where the turn's time went."""

    def since_arrival_ms(at: float | None) -> float | None:
        return round((at - received_at) * 1000, 3) if at is not None else None

    return {
        "resolution": resolution.value if resolution else "none",
        "api_overhead_ms": round((engine_start - received_at) * 1000, 3),
        "inference_ttft_ms": round(plan.ttft_s * 1000, 3),
        # the same marks as the client's (harness.protocol.timing_marks), stamped at the write
        "ttft_ms": since_arrival_ms(decoded.first_token_at),
        "ttfe_ms": since_arrival_ms(decoded.first_output_at),
        "stages_ms": stages_ms,
        "cached_tokens": cached_tokens,
    }
