"""Running one case: its body under its budgets, its grading, the liveness probe after it, and
what the rest of the run learns from it (a target that stopped answering, a setup that failed).

Everything that waits happens here, in pytest's call phase (`pytest_pyfunc_call`), never in a
reporting hook: a hook that waits can be cut by pytest-timeout's backstop, and a hook cut short
is an INTERNALERROR with no report at all. Every wait is bounded by the harness itself (the
event, response and case timeouts, the probe's budget, the close budget) and the backstop
(`backstop_s`) sits above their sum, so it can only fire on a harness bug, inside the call.

How long a run takes to end against a target that stops mid-run (`worst_stop_s`): silence is
caught by the event timeout, a response that streams forever or drips by the response timeout,
a target that died by its refused connection; then one probe (at most `probe_budget_s`) decides,
and the remaining cases are not run. With the default timeouts that is under 60 s.

Why the probe: a target that accepts the upgrade and then never answers (a black hole), or one
that swallows error events, would make every remaining case wait out its timeouts, ten minutes
of FAILs that say nothing new. After a case whose findings look like silence (`STALL_RULES`),
the liveness probe (harness.transport.liveness_probe) asks a fresh socket whose frames land in the
case's wire log: a plain create must be answered and an unknown previous_response_id must get an
error event, each within the event timeout (so a slow but correct target passes). If either is
met with silence the remaining cases are not run (`TargetStopped`).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

from harness.conformance.model.verdict import SETUPS, CaseMeta, Outcome, Verdict, decide_verdict
from harness.conformance.runner.context import (
    CLOSE_BUDGET_S,
    CaseContext,
    SetupNotRun,
    TargetStopped,
)
from harness.conformance.runner.recording import RecordingWsClient
from harness.conformance.targets.profile import TargetProfile
from harness.transport.liveness_probe import probe

# Findings after which the target may have stopped answering (silence, a response that never
# ends, a connection that cannot even be opened: a target that died): a liveness probe decides.
STALL_RULES: Final = frozenset(
    {"transport.stall", "transport.endless", "transport.error", "case.timeout", "queue.no_drop"}
)
PROBE_BUDGET_EVENTS: Final = 2  # the whole probe: at most this many event timeouts
BACKSTOP_MARGIN_S: Final = 15.0  # pytest-timeout = everything the harness bounds + this


def needs_probe(outcome: Outcome) -> bool:
    """Whether a case's outcome looks like a target that stopped answering."""
    return any(f.rule_id in STALL_RULES for f in outcome.findings)


def probe_budget_s(event_timeout_s: float) -> float:
    """The liveness probe's whole budget: a plain create and an invalid one, on a fresh socket."""
    return PROBE_BUDGET_EVENTS * event_timeout_s


def case_budget_s(
    meta: CaseMeta, profile: TargetProfile, case_timeout_s: float, event_s: float
) -> float:
    """A case's own budget: the case timeout; a lifetime case waits out the declared lifetime."""
    if "lifetime" in meta.requires:
        return max(case_timeout_s, profile.lifetime_s + 2 * event_s)
    return case_timeout_s


def backstop_s(case_budget: float, event_timeout_s: float) -> float:
    """pytest-timeout's budget for one case: above every wait the harness bounds itself."""
    return case_budget + probe_budget_s(event_timeout_s) + CLOSE_BUDGET_S + BACKSTOP_MARGIN_S


def worst_stop_s(event_timeout_s: float, response_timeout_s: float) -> float:
    """The longest the first case against a target that stops answering can take, probe
    included: a response given up at the response timeout (the slowest of silence, an endless
    or dripping stream, a refused connection), the probe, and closing the case's sockets."""
    first = max(response_timeout_s, event_timeout_s)
    return first + probe_budget_s(event_timeout_s) + CLOSE_BUDGET_S


@dataclass
class RunLedger:
    """What one target's run learned from its cases so far."""

    stopped_after: str | None = None  # the case after which the target stopped answering
    stop_reason: str = ""
    failed_setups: dict[str, str] = field(default_factory=dict)  # setup -> case it failed in

    def stopped_message(self) -> str | None:
        if self.stopped_after is None:
            return None
        return f"not run: the target stopped answering after case {self.stopped_after}"

    def blocked_by(self, meta: CaseMeta) -> str | None:
        """Why `meta` is not run: a setup it needs already failed elsewhere."""
        for name in meta.setups:
            where = self.failed_setups.get(name)
            if where is not None and where != meta.id:
                return f"not run: setup failed in {where} ({SETUPS[name].description})"
        return None

    def learn(self, meta: CaseMeta, outcome: Outcome) -> None:
        """Record a setup this case found failing: as its precondition, or as its judge."""
        if outcome.failed_setup is not None:
            self.failed_setups.setdefault(outcome.failed_setup, meta.id)
        for name, setup in SETUPS.items():
            if setup.judge == meta.id and any(f.rule_id == setup.rule for f in outcome.findings):
                self.failed_setups.setdefault(name, meta.id)


@dataclass
class CaseResult:
    outcome: Outcome
    verdict: Verdict
    not_run: bool = False  # the target had stopped answering before this case
    setup_failed_in: str | None = None  # not run: a setup it needs failed in this case


def run_case(
    context: CaseContext,
    body: Callable[[], Awaitable[None]],
    ledger: RunLedger,
    *,
    budget_s: float,
) -> CaseResult:
    """Run one case to its verdict (the probe after it included); never raises for anything
    the target does. pytest's own exceptions (the backstop, ^C) pass through."""
    meta = context.meta

    async def main() -> Exception | None:
        try:
            context.require(*meta.requires)
            stopped = ledger.stopped_message()
            if stopped is not None:
                raise TargetStopped(stopped)
            blocked = ledger.blocked_by(meta)
            if blocked is not None:
                context.precondition(False, blocked)
                raise SetupNotRun(blocked)
            async with asyncio.timeout(budget_s):
                await body()
        except Exception as exc:  # graded below: the target's doing, or the harness's bug
            return exc
        finally:
            context.duration_ms = (time.perf_counter_ns() - context.started_ns) / 1e6
            await context.aclose()
        return None

    exc = asyncio.run(main())
    outcome = context.absorb(exc)
    not_run = isinstance(exc, TargetStopped)
    if not not_run:
        probe_if_stalled(context, outcome, ledger)
        ledger.learn(meta, outcome)
    # a case not run is FAIL at any level: nothing about the target was certified by it
    verdict = Verdict.FAIL if not_run else decide_verdict(meta.level, outcome)
    setup_failed_in = None
    if isinstance(exc, SetupNotRun):
        setup_failed_in = next(
            ledger.failed_setups[n] for n in meta.setups if n in ledger.failed_setups
        )
    return CaseResult(outcome, verdict, not_run=not_run, setup_failed_in=setup_failed_in)


def probe_if_stalled(context: CaseContext, outcome: Outcome, ledger: RunLedger) -> None:
    """After a case whose findings look like a target that stopped answering, ask a fresh
    socket (its frames in the case's wire log); if it is not answered, the rest of this
    target's cases are not run (FAIL: transport.stopped)."""
    if ledger.stopped_after is not None or not needs_probe(outcome):
        return
    reason = asyncio.run(
        probe(
            context.target.ws_url,
            model=context.profile.model,
            api_key=context.target.api_key,
            event_timeout_s=context.event_timeout_s,
            budget_s=probe_budget_s(context.event_timeout_s),
            check_errors=True,
            open_ws=functools.partial(RecordingWsClient.open, log=context.log, label="probe"),
        )
    )
    if reason is None:
        outcome.notes.append("liveness probe after this case: the target still answers")
        return
    ledger.stopped_after, ledger.stop_reason = context.meta.id, reason
    outcome.notes.append(
        f"liveness probe after this case: the target stopped answering: {reason}; "
        "the remaining cases are not run"
    )
