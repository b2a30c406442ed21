"""Is the target still answering? The liveness probe run after a case that stalled.

A target that accepts the upgrade and then never answers (a black hole), or one that swallows
error events, would make every remaining case wait out its timeouts: ten minutes of FAILs that
say nothing new. After a case whose findings look like silence (STALL_RULES), the plugin asks a
fresh socket: a plain create must reach its terminal event and an unknown previous_response_id
must get an error event, each event within the event timeout (so a slow but correct target
passes). If either is met with silence the remaining cases are not run (`TargetStopped`).
"""

from __future__ import annotations

import time
from typing import Final

from harness.conformance import bodies
from harness.conformance.model import Outcome
from harness.conformance.wirelog import RecordingWsClient, WireLog
from harness.errors import WsmodeError
from harness.protocol.events import TERMINAL_TYPES
from harness.protocol.requests import create_event
from harness.transport.events import TargetTimeout, TransportError


class TargetStopped(WsmodeError):
    """An earlier case found the target no longer answering: this case is not run."""


PROBE_PREVIOUS_ID = "resp_wsmode_liveness_probe"
# Findings after which the target may have stopped answering: a liveness probe decides.
STALL_RULES: Final = frozenset({"transport.stall", "case.timeout", "queue.no_drop"})


def needs_probe(outcome: Outcome) -> bool:
    """Whether a case's outcome looks like a target that stopped answering."""
    return any(f.rule_id in STALL_RULES for f in outcome.findings)


async def liveness_probe(
    ws_url: str,
    *,
    api_key: str | None,
    model: str,
    log: WireLog,
    timeout_s: float,
    case_timeout_s: float,
) -> str | None:
    """Whether the target still answers, on a fresh socket: a plain create must reach its
    terminal event and an unknown previous_response_id must get an error event, each event
    within `timeout_s` (the event timeout: a slow but correct target passes). Returns why the
    target is considered stopped, or None when it answered both."""
    try:
        client = await RecordingWsClient.open(
            ws_url, log=log, label="probe", api_key=api_key, timeout_s=timeout_s
        )
    except TransportError as exc:
        return f"a fresh connection failed ({exc})"
    try:
        await client.send_json(create_event(model=model, input=bodies.SHORT_PROMPT, store=False))
        if not await _answered(client, timeout_s, case_timeout_s, error=False):
            return f"a plain create got no terminal event (each event awaited {timeout_s:g} s)"
        body = create_event(
            model=model,
            input=bodies.SHORT_PROMPT,
            store=False,
            previous_response_id=PROBE_PREVIOUS_ID,
        )
        await client.send_json(body)
        if not await _answered(client, timeout_s, case_timeout_s, error=True):
            return f"an invalid create got no error event within {timeout_s:g} s (errors swallowed)"
        return None
    except TransportError as exc:
        return f"the probe's socket failed ({exc})"
    finally:
        try:
            await client.close()
        except Exception as exc:  # a dead socket's close must not mask the probe's answer
            log.note("probe", f"close failed: {type(exc).__name__}: {exc}")


async def _answered(
    client: RecordingWsClient, timeout_s: float, budget_s: float, *, error: bool
) -> bool:
    """Read until a terminal event (or, with `error`, an error event); False on silence."""
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        try:
            timed = await client.recv(min(timeout_s, max(deadline - time.monotonic(), 0.001)))
        except TargetTimeout:
            return False
        if error and timed.type in ("error", "response.failed"):
            return True
        if not error and timed.type in TERMINAL_TYPES:
            return True
    return False
