"""The judges of the client cases: what each case holds the server's observations and the
caller's reports to (the catalogue pairs each with a server behaviour and a task)."""

from __future__ import annotations

from collections.abc import Callable

from harness.conformance.clients.judging import (
    Evidence,
    describe,
    require_completed,
    require_error,
)
from harness.conformance.clients.observed import output_text
from harness.conformance.clients.severity import RETRY_BUDGET, storm_level
from harness.conformance.clients.wire_rules import closed_cleanly

Judge = Callable[[Evidence], None]


def all_complete(ev: Evidence) -> None:
    for turn in range(len(ev.task.turns)):
        require_completed(ev, turn, "client.outcome", "did not complete")


def conversation(ev: Evidence) -> None:
    all_complete(ev)
    closed_cleanly(ev)
    connections = {c.conn for c in ev.watch.creates()}
    if len(connections) > 1:
        ev.find("client.incremental", f"the conversation used {len(connections)} connections")
    for turn in range(1, len(ev.task.turns)):
        for create in ev.creates_for(turn):
            if create.previous_response_id is None:
                ev.find(
                    "client.incremental",
                    f"turn {turn} was sent without previous_response_id (the whole history again)",
                )
            elif create.mentions(ev.markers[turn - 1]):
                ev.find("client.incremental", f"turn {turn} resent earlier turns with its parent")


def upgrade_refused(status: int) -> Judge:
    def judge(ev: Evidence) -> None:
        report = ev.report(0)
        fell_back = bool(ev.watch.http_requests())
        if report is not None and report.status == "completed":
            if not fell_back and status != 429:
                ev.note("completed although every upgrade was refused")
        elif report is not None and report.status == "error":
            if report.error_status != status and report.error_code is None:
                in_text = str(status) in (report.error_message or "")
                ev.find(
                    "client.error_detail",
                    f"the caller's error names neither the refusal's status {status} nor its "
                    f"code{' (the status only inside its message)' if in_text else ''}: "
                    f"{describe(report)}",
                )
        elif report is not None or not ev.run.killed:
            ev.find(
                "client.outcome", f"turn 0: expected an error or an answer, got {describe(report)}"
            )
        attempts = ev.watch.upgrades()
        storm = storm_level(len(attempts))
        if storm is not None:
            span = attempts[-1].at_ms - attempts[0].at_ms
            ev.find(
                "client.retry_storm",
                f"{len(attempts)} upgrade attempts in {span:.0f} ms after a {status} "
                f"(budget {RETRY_BUDGET})",
                storm,
            )
        if status == 429 and len(attempts) > 1:
            gap_ms = attempts[1].at_ms - attempts[0].at_ms
            retry_after_s = ev.behaviour.retry_after_s or 0
            if gap_ms < 900 * retry_after_s:
                ev.find(
                    "client.retry_storm",
                    f"retried {gap_ms:.0f} ms after a 429 that asked for Retry-After: "
                    f"{retry_after_s} s",
                    storm_level(len(attempts)) or "SHOULD",
                )
        if status == 426 and not fell_back:
            ev.find("client.fallback", "no HTTP request followed the 426")
        if fell_back:
            ev.note(f"fell back to HTTP after {len(attempts)} upgrade attempt(s)")

    return judge


def close_before_101(ev: Evidence) -> None:
    report = ev.report(0)
    if report is None or report.status not in ("completed", "error"):
        if report is not None or not ev.run.killed:
            ev.find("client.outcome", f"turn 0: expected an answer or an error: {describe(report)}")
    elif report.status == "error":
        ev.find(
            "client.safe_retry",
            "the create was never sent (the connection closed before 101), yet the turn "
            f"failed instead of being retried: {describe(report)}",
        )
    attempts = len(ev.watch.upgrades())
    storm = storm_level(attempts)
    if storm is not None:
        ev.find("client.retry_storm", f"{attempts} upgrade attempts (budget {RETRY_BUDGET})", storm)


def drop_mid_stream(ev: Evidence) -> None:
    if not any("1006" in r.data for r in ev.watch.of_kind("close")):
        ev.outcome.harness_error = "the server did not cut the stream (fewer deltas than asked?)"
        return
    report = ev.report(0)
    resent = ev.creates_for(0)
    if len(resent) > 1 and report is not None and report.status == "completed":
        ev.find(
            "client.no_silent_replay",
            f"turn 0 was cut mid-stream and sent again on {resent[-1].conn} "
            f"({len(resent)} creates), and the caller was told it completed",
        )
    elif report is not None and report.status != "error" and len(resent) <= 1:
        if report.status != "completed":  # a completed one is judged by client.truthful
            ev.find("client.error_surfaced", f"turn 0 was cut (1006): {describe(report)}")
    elif report is None and not ev.run.killed:
        ev.find("client.outcome", "turn 0 was cut (1006) and its caller was never told")
    require_completed(ev, 1, "client.recovers", "after the dropped connection did not complete")


def after_idle_loss(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
    if not require_completed(ev, 1, "client.recovers", "after the idle socket was lost"):
        sent = ev.creates_for(1)
        if not sent:
            ev.note("turn 1 never reached the server: the client did not reconnect")


def not_found(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
    if not any(c.previous_response_id for c in ev.watch.creates()):
        # nothing was there to miss: report it, never a PASS that tested nothing
        ev.outcome.informational = True
        ev.note("the client never sent previous_response_id: no continuation to miss")
    tries = ev.creates_for(1)
    first_response = ev.report(0)
    answer = ev.watch.response(first_response.response_id if first_response else None)
    if len(tries) < 2:
        report = ev.report(1)
        if report is not None and report.status == "error":
            ev.find(
                "client.full_context",
                "previous_response_not_found reached the caller; the turn was not resent "
                "with the full context",
            )
        elif report is None or report.status != "completed":
            ev.find("client.full_context", f"turn 1: {describe(report)}")
        return
    retry = tries[-1]
    problems = []
    if retry.previous_response_id is not None:
        problems.append(f"still names previous_response_id {retry.previous_response_id}")
    if not retry.mentions(ev.markers[0]):
        problems.append("lacks turn 0's user message")
    if answer is not None and output_text(answer) and output_text(answer) not in retry.input_text():
        problems.append("lacks turn 0's answer")
    if problems:
        ev.find("client.full_context", "the resent turn 1 " + "; ".join(problems))
    if retry.conn != tries[0].conn:
        ev.note(f"resent on a new connection ({retry.conn}), not the same socket")
    require_completed(ev, 1, "client.full_context", "after the full-context resend")


def connection_limit(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
    if require_completed(ev, 1, "client.recovers", "after websocket_connection_limit_reached"):
        conns = {c.conn for c in ev.creates_for(1)} | {c.conn for c in ev.creates_for(0)}
        if len(conns) < 2 and not ev.watch.http_requests():
            ev.note("turn 1 completed on the expired connection (the server did not close it?)")


def resends(ev: Evidence) -> None:
    """Turn 0 is answered the same way however often it is sent: note resends, and more than
    RETRY_BUDGET of them is a storm, graded by its count."""
    sent = len(ev.creates_for(0))
    storm = storm_level(sent)
    if storm is not None:
        ev.find(
            "client.retry_storm",
            f"turn 0 was sent {sent} times, answered alike each time (budget {RETRY_BUDGET})",
            storm,
        )
    elif sent > 1:
        ev.note(f"turn 0 was sent {sent} times before its outcome reached the caller")


def error_first_turn(code: str, *, detail_rule: str = "client.error_detail") -> Judge:
    def judge(ev: Evidence) -> None:
        require_error(ev, 0, code=code, code_rule=detail_rule)
        resends(ev)
        require_completed(ev, 1, "client.recovers", "after the error did not complete")

    return judge


def string_error(ev: Evidence) -> None:
    report = require_error(ev, 0, code=None)
    resends(ev)
    if report is not None and "invalid_prompt" not in (report.error_message or ""):
        ev.find(
            "client.error_detail",
            f"the server's message did not reach the caller: {describe(report)}",
        )
    require_completed(ev, 1, "client.recovers", "after the error did not complete")


def response_failed(ev: Evidence) -> None:
    if not any(r.get("status") == "failed" for _, r in ev.watch.responses()):
        ev.outcome.harness_error = "the server did not fail the response (too few deltas?)"
        return
    report = require_error(
        ev,
        0,
        code="invalid_prompt",
        statuses=("failed", "error"),
        rule_id="client.terminal",
        code_rule="client.error_surfaced",
    )
    if report is not None:
        failed = [r for _, r in ev.watch.responses() if r.get("status") == "failed"]
        if failed and report.response_id != failed[0].get("id"):
            ev.find(
                "client.error_detail",
                f"the failed response's id {failed[0].get('id')} did not reach the caller "
                f"(got {report.response_id!r})",
            )
    resends(ev)
    require_completed(ev, 1, "client.recovers", "after response.failed did not complete")


def response_incomplete(ev: Evidence) -> None:
    report = ev.report(0)
    if report is None or report.status == "completed":
        if report is not None or not ev.run.killed:
            ev.find("client.terminal", f"turn 0 ended response.incomplete: {describe(report)}")
    elif report.status != "incomplete":
        ev.find(
            "client.error_detail",
            f"turn 0 ended response.incomplete; the caller was told {describe(report)}",
        )
    elif report.incomplete_reason != "max_output_tokens":
        ev.find(
            "client.error_detail",
            f"the reason max_output_tokens did not reach the caller: {report.incomplete_reason!r}",
        )
    resends(ev)
    require_completed(ev, 1, "client.recovers", "after response.incomplete did not complete")


def fifo(ev: Evidence) -> None:
    """The server answers a connection's creates in order: the k-th create on a connection owns
    the k-th response finished there; each turn's caller must get exactly that one."""
    creates, responses = ev.watch.creates(), ev.watch.responses()
    for turn in range(len(ev.task.turns)):
        if not require_completed(ev, turn, "client.fifo", "of the queue did not complete"):
            continue
        report, mine = ev.report(turn), ev.creates_for(turn)
        if report is None or not mine:
            continue
        conn = mine[0].conn
        position = [c for c in creates if c.conn == conn].index(mine[0])
        answered = [r for c, r in responses if c == conn]
        if position >= len(answered):
            continue
        expected = answered[position]
        if report.response_id not in (None, expected.get("id")):
            ev.find(
                "client.fifo",
                f"turn {turn} was given {report.response_id}, the answer to another create "
                f"(its own is {expected.get('id')})",
            )
        elif report.text not in (None, output_text(expected)):
            ev.find("client.fifo", f"turn {turn} was given another create's text")
    if not overlapped(ev):
        ev.note("the client sent each create after the previous answer: FIFO held trivially")


def overlapped(ev: Evidence) -> bool:
    """Did a create arrive while an earlier one on its connection was unanswered?"""
    creates = ev.watch.creates()
    finished = [r.at_ms for r in ev.watch.of_kind("response")]
    return any(sum(1 for t in finished if t < c.at_ms) < i for i, c in enumerate(creates))


def lanes(ev: Evidence) -> None:
    require_completed(ev, 0, "client.lane", "on lane 'a' did not complete")
    report = require_error(ev, 1, code="invalid_prompt", rule_id="client.lane")
    if report is not None and report.stream_id != "b":
        ev.find(
            "client.lane",
            f"lane b's error reached the caller without its stream_id ({report.stream_id!r})",
        )


def slow(ev: Evidence) -> None:
    require_completed(ev, 0, "client.patient", "timed out before the slow first token")


def keepalive(ev: Evidence) -> None:
    all_complete(ev)


def history_resent(ev: Evidence) -> None:
    """Performance: the bytes of input sent beyond the new message, over a socket that held
    each parent (what resending the history costs)."""
    all_complete(ev)
    first = ev.creates_for(0)
    if not first:
        return
    conn, resent_bytes, turns_resent = first[0].conn, 0, 0
    for turn in range(1, len(ev.task.turns)):
        for create in ev.creates_for(turn):
            if create.conn == conn and create.mentions(ev.markers[turn - 1]):
                turns_resent += 1
                resent_bytes += len(create.input_text()) - len(ev.task.turns[turn].input)
    if turns_resent:
        ev.find(
            "client.incremental",
            f"{turns_resent} continuation(s) on the socket that held their parent resent the "
            f"history: {resent_bytes} bytes of earlier turns sent again",
        )


def ambiguous_failure(ev: Evidence) -> None:
    report = ev.report(0)
    sent = ev.creates_for(0)
    if report is None and not ev.run.killed:
        ev.find("client.outcome", "turn 0 was received, then cut before any event; no outcome")
    elif report is not None and report.status == "completed" and len(sent) > 1:
        ev.note(
            f"turn 0 was sent {len(sent)} times after the ambiguous failure (the server had "
            "received it); the caller was told it completed"
        )
    resends(ev)
    require_completed(ev, 1, "client.recovers", "after the ambiguous failure did not complete")


def over_frame_limit(ev: Evidence) -> None:
    if not any("1009" in r.data for r in ev.watch.of_kind("close")):
        ev.outcome.harness_error = "the server did not close 1009 (was the message under 32 KiB?)"
        return
    report = ev.report(0)
    told = report is not None or not ev.run.killed  # a killed run is judged by no_hang
    if told and (report is None or report.status == "completed"):
        ev.find("client.error_surfaced", f"turn 0 was refused (1009): {describe(report)}")
    attempts = len(ev.watch.upgrades())
    storm = storm_level(attempts)
    if storm is not None:
        ev.find(
            "client.retry_storm",
            f"the oversized create was tried on {attempts} connections (budget {RETRY_BUDGET})",
            storm,
        )
    require_completed(ev, 1, "client.recovers", "after the 1009 did not complete")


def fresh_task(ev: Evidence) -> None:
    """A new task's creates name no response of an earlier task as their parent (a parent made
    within the new task, such as a warm-up's, is the task's own)."""
    all_complete(ev)
    owners = ev.watch.owners()
    first = [i for i, t in enumerate(ev.task.turns) if t.new_conversation]
    for turn in first:
        earlier = [c for t in range(turn) for c in ev.creates_for(t)]
        for create in ev.creates_for(turn):
            parent = create.previous_response_id
            if parent is not None and owners.get(parent) in earlier:
                ev.find(
                    "client.fresh_chain",
                    f"turn {turn} starts a new task, yet continues {parent}, a response of the "
                    "task before it",
                )
                return
            if any(create.mentions(m) for m in ev.markers[:turn]):
                ev.find("client.fresh_chain", f"turn {turn} carries the earlier task's turns")
                return
