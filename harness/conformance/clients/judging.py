"""Judging a client: its rules, the checks every case runs, and the helpers the cases share.

A verdict combines two witnesses: what the server observed (`observed.ServerWatch`: upgrades,
connections, creates, responses) and what the caller of the client was told (the adapter's turn
reports). Findings and verdicts are the server certificate's (`model.Finding`, `Outcome`,
`decide_verdict`), so client certificates read and grade the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.conformance.clients.contract import AdapterRun, Task, TurnReport
from harness.conformance.clients.crashes import from_report, from_stderr
from harness.conformance.clients.observed import Create, ServerWatch, output_text
from harness.conformance.clients.severity import client_rule_level
from harness.conformance.model.verdict import Finding, Outcome
from harness.protocol.levels import RequirementLevel
from reference_server.hooks.faults import CaseBehaviour


@dataclass
class Evidence:
    """Everything a case's verdict reads, and the outcome it writes."""

    task: Task
    markers: list[str]  # the unique text each turn's input carries
    run: AdapterRun
    watch: ServerWatch
    behaviour: CaseBehaviour = field(default_factory=CaseBehaviour)
    outcome: Outcome = field(default_factory=Outcome)

    def find(self, rule_id: str, message: str, level: RequirementLevel | None = None) -> None:
        """A finding at its rule's level (`severity`), or at `level` where the rule grades by
        count (a retry storm)."""
        graded = level if level is not None else client_rule_level(rule_id)
        self.outcome.findings.append(Finding(rule_id, graded, message))

    def note(self, text: str) -> None:
        self.outcome.notes.append(text)

    def report(self, turn: int) -> TurnReport | None:
        return self.run.for_turn(turn)

    def creates_for(self, turn: int) -> list[Create]:
        """The creates that carry `turn` as their newest turn (a resend with the full context
        mentions the earlier turns too, never a later one)."""
        later = self.markers[turn + 1 :]
        return [
            c
            for c in self.watch.creates()
            if c.mentions(self.markers[turn]) and not any(c.mentions(m) for m in later)
        ]

    def completed(self, turn: int) -> bool:
        report = self.report(turn)
        return report is not None and report.status == "completed"


def describe(report: TurnReport | None) -> str:
    if report is None:
        return "no report"
    if report.status in ("error", "failed"):
        crash = from_report(report.raw)
        if crash is not None:  # not the server's answer: the library's own bug
            return f"{report.status}: {crash.describe()}"
        return (
            f"{report.status} (code {report.error_code!r}, status {report.error_status}, "
            f"message {(report.error_message or '')[:120]!r})"
        )
    if report.status == "incomplete":
        return f"incomplete ({report.incomplete_reason!r})"
    return report.status


# -- the checks of every case -------------------------------------------------------------------
def common_checks(ev: Evidence) -> None:
    """No hang, one well-formed report per turn, no crash, and no completed turn the server did
    not complete; a turn the adapter cannot do (`unsupported`) makes the case UNIMPLEMENTED."""
    run = ev.run
    if run.start_error is not None:
        ev.outcome.harness_error = run.start_error
        return
    if run.killed:
        ev.find(
            "client.no_hang",
            f"still running after the case's bound of {ev.task.timeout_s:g} s: killed "
            f"(turns reported: {sorted(r.turn for r in run.reports) or 'none'})",
        )
    for line in run.bad_lines[:3]:
        ev.find("client.report_format", f"not a turn report: {line[:200]}")
    unsupported = [r for r in run.reports if r.status == "unsupported"]
    if unsupported:
        reason = unsupported[0].error_message or unsupported[0].raw.get("reason") or ""
        ev.outcome.unimplemented = f"the adapter does not support this case: {reason}".strip()
        return
    if not run.killed:
        missing = [i for i in range(len(ev.task.turns)) if ev.report(i) is None]
        if missing:
            crash = from_stderr(run.stderr_tail)
            tail = " | ".join(run.stderr_tail[-3:])[-300:]
            ev.find(
                "client.outcome",
                f"no outcome for turn(s) {missing}; the adapter exited with {run.exit_code}"
                + (f": {crash.describe()}" if crash else f"; stderr: {tail}" if tail else ""),
            )
    for report in run.reports:
        if report.status == "completed":
            _check_truthful(ev, report)


def _check_truthful(ev: Evidence, report: TurnReport) -> None:
    candidates = [r for _, r in ev.watch.responses() if r.get("status") == "completed"]
    if report.response_id is not None:
        response = ev.watch.response(report.response_id)
        if response is None:
            ev.find(
                "client.truthful",
                f"turn {report.turn} reported completed as {report.response_id!r}, a response "
                "the server never finished",
            )
            return
        candidates = [response]
        if response.get("status") != "completed":
            ev.find(
                "client.truthful",
                f"turn {report.turn} reported completed; the server ended "
                f"{report.response_id} {response.get('status')!r}",
            )
            return
    if report.text is None:
        return
    if not any(output_text(r) == report.text for r in candidates):
        ev.find(
            "client.truthful",
            f"turn {report.turn}'s text ({len(report.text)} chars) is not the text of a "
            "response the server completed (cut short, or mixed up)",
        )


# -- helpers for the cases ----------------------------------------------------------------------
def require_completed(ev: Evidence, turn: int, rule_id: str, why: str) -> bool:
    report = ev.report(turn)
    if report is not None and report.status == "completed":
        return True
    if report is not None or not ev.run.killed:
        ev.find(rule_id, f"turn {turn} {why}: {describe(report)}")
    return False


def require_error(
    ev: Evidence,
    turn: int,
    *,
    code: str | None,
    statuses: Iterable[str] = ("error",),
    rule_id: str = "client.error_surfaced",
    code_rule: str = "client.error_detail",
) -> TurnReport | None:
    """The turn ended in an error outcome (`rule_id`), carrying `code` (`code_rule`)."""
    report = ev.report(turn)
    allowed = tuple(statuses)
    if report is None or report.status not in allowed:
        if report is not None or not ev.run.killed:
            ev.find(rule_id, f"turn {turn}: expected {'/'.join(allowed)}, got {describe(report)}")
        return None
    if code is not None and report.error_code != code:
        in_text = code in (report.error_message or "")  # a CLI's caller reads text
        ev.find(
            "client.error_detail" if in_text else code_rule,
            f"turn {turn}'s error does not carry the server's code {code!r}"
            + (" (only inside its message)" if in_text else "")
            + f": {describe(report)}",
        )
    return report
