"""What one exchange (a create and its stream) yields for the load harness: the turn's metrics
from the client's stamps and the server's `wsmode` stamps, and why it failed, if it did.
Shared by the rollout driver (harness.load.core.rollout_driver) and the fixed-shape load
(harness.load.fixed.conversations).
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.load.core.measurements import TurnResult
from harness.protocol.accumulator import RULES
from harness.protocol.events import NON_OUTPUT_TYPES, reached_output_cap
from harness.protocol.extension import read_server_stamps
from harness.transport.exchange import Exchange


def fill_metrics(result: TurnResult, exchange: Exchange, context_estimate: int) -> None:
    result.ttft_ms = exchange.ttft_ms
    result.ttfe_ms = exchange.ttfe_ms
    result.turn_e2e_ms = exchange.e2e_ms
    result.itl_gaps_ms = exchange.delta_gaps_ms()
    outputs = [t for t in exchange.events if t.type not in NON_OUTPUT_TYPES]
    terminal = exchange.events[-1] if exchange.events else None
    if outputs:
        result.decode_ms = (outputs[-1].received_ns - outputs[0].received_ns) / 1e6
        if terminal is not None:
            result.post_ms = (terminal.received_ns - outputs[-1].received_ns) / 1e6
    final = exchange.final_response or {}
    usage = final.get("usage") if isinstance(final.get("usage"), Mapping) else None
    deltas = sum(1 for t in exchange.events if t.type.endswith(".delta"))
    if usage is not None:
        result.context_tokens = int(usage.get("input_tokens") or 0)
        result.output_tokens = int(usage.get("output_tokens") or 0)
        details = usage.get("input_tokens_details")
        if isinstance(details, Mapping) and isinstance(details.get("cached_tokens"), int):
            result.cached_tokens = int(details["cached_tokens"])
    else:
        result.context_tokens = context_estimate
        result.output_tokens = deltas
    if result.ttft_ms is not None and result.turn_e2e_ms is not None and result.output_tokens > 1:
        result.tpot_ms = (result.turn_e2e_ms - result.ttft_ms) / (result.output_tokens - 1)
    stamps = read_server_stamps(final)
    if stamps is not None:
        result.inference_ttft_ms = stamps.inference_ttft_ms
        result.server_ttft_ms = stamps.ttft_ms
        result.server_api_overhead_ms = stamps.api_overhead_ms
        if stamps.stages_ms is not None:
            result.stages_ms = stamps.stages_ms
        result.resolution = stamps.resolution
    if exchange.response is not None:
        result.violations = tuple(
            v.rule_id for v in exchange.response.violations if RULES[v.rule_id][0] == "MUST"
        )


def capped_exchange_error(exchange: Exchange) -> str | None:
    """As `exchange_error`, for a create that sent `max_output_tokens`: stopping there is what
    was asked for, not a failure."""
    error = exchange_error(exchange)
    if error is None or not error.startswith("response.incomplete"):
        return error
    if reached_output_cap(exchange.final_response):
        return None
    details = (exchange.final_response or {}).get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    return f"response.incomplete ({reason})"


def exchange_error(exchange: Exchange) -> str | None:
    """Why an exchange did not complete, or None when it did."""
    if exchange.transport_error is not None:
        return f"transport: {exchange.transport_error}"
    if exchange.request_error is not None:
        err = exchange.request_error
        return f"request error {err.status} {err.code or err.type}: {err.message[:200]}"
    if exchange.response is None:
        return "no response"
    if not exchange.response.done:
        return "stream ended before the terminal event"
    if exchange.response.terminal_type != "response.completed":
        error = (exchange.final_response or {}).get("error") or {}
        code = error.get("code") if isinstance(error, Mapping) else None
        return f"{exchange.response.terminal_type} ({code or 'no code'})"
    return None
