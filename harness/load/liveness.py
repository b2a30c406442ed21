"""Dead-target detection for the bench: a bounded liveness probe after a turn that timed out.

The same idea as certify's (harness/conformance): a turn that timed out may mean a slow turn or a
target that stopped answering. One probe on a fresh connection decides: a tiny `store: false`
create must get its terminal event (or an error event: an error is an answer) within
`PROBE_TIMEOUT_S`. If it does not, the target is dead: every rollout stops at its next turn, and
those not started end at once, each with the probe's reason, instead of every turn in the run
waiting out its own timeout. A slow but live target passes the probe and the run goes on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final

from harness.transport.events import TargetTimeout, TransportError
from harness.transport.exchange import Exchange, sse_exchange, ws_exchange
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient

DEFAULT_TURN_TIMEOUT_S: Final = 60.0  # certify's case timeout
PROBE_TIMEOUT_S: Final = 10.0  # certify's event timeout
_PROBE_INPUT: Final = "ping"


@dataclass
class TargetWatch:
    """Shared by every rollout against one target: whether a probe found it dead."""

    dead_reason: str | None = None
    probes: int = 0
    probe_timeout_s: float = PROBE_TIMEOUT_S
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def after_timeout(self, url: str, mode: str, model: str, api_key: str | None) -> None:
        """Probe the target (one probe at a time; none once it is known dead)."""
        async with self._lock:
            if self.dead_reason is not None:
                return
            self.probes += 1
            reason = await probe(url, mode, model, api_key, self.probe_timeout_s)
            if reason is not None:
                self.dead_reason = f"target stopped answering: {reason}"


async def probe(
    url: str, mode: str, model: str, api_key: str | None, timeout_s: float = PROBE_TIMEOUT_S
) -> str | None:
    """None when the target answered a tiny create within `timeout_s`; else why not."""
    body = {"model": model, "input": _PROBE_INPUT, "store": False, "max_output_tokens": 16}
    try:
        async with asyncio.timeout(timeout_s):
            exchange = await _probe_exchange(url, mode, body, api_key, timeout_s)
    except TimeoutError:
        return f"the liveness probe got no answer within {timeout_s:g} s"
    except TransportError as exc:
        return f"the liveness probe failed ({exc})"
    if exchange.request_error is not None or exchange.final_response is not None:
        return None
    error = exchange.transport_error
    if isinstance(error, TargetTimeout):
        return f"the liveness probe got no terminal event within {timeout_s:g} s"
    return f"the liveness probe failed ({error})"


async def _probe_exchange(
    url: str, mode: str, body: dict[str, object], api_key: str | None, timeout_s: float
) -> Exchange:
    if mode == "ws":
        client = await WsClient.connect(url, api_key=api_key, timeout_s=timeout_s)
        try:
            return await ws_exchange(client, body, timeout_s=timeout_s)
        finally:
            await client.close()
    sse = SseClient(url, api_key=api_key, timeout_s=timeout_s, max_connections=1)
    try:
        return await sse_exchange(sse, body, timeout_s=timeout_s)
    finally:
        await sse.close()
