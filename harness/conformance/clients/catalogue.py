"""The client cases: each a server behaviour a real client got wrong, and how it is judged.

A case names its server behaviour (`faults.CaseBehaviour`), the task the adapter gets, and a
judge that reads what the server observed and what the caller was told. Ids start with the
docs/PROTOCOL.md section of the behaviour; the level comes from what the API documents (MUST
for documented events and errors a client has to handle, SHOULD for recovery the docs advise
or the field expects, MAY for what is only reported); `sources` names the protocol section and
the public issue or pull request where a client was seen to fail it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.contract import Task, Turn
from harness.conformance.clients.judging import (
    Evidence,
    describe,
    require_completed,
    require_error,
)
from harness.conformance.clients.observed import output_text
from harness.protocol.levels import RequirementLevel
from reference_server.hooks.faults import CaseBehaviour

STORM_LIMIT: Final = 3  # upgrade attempts for one refused turn before it is a storm


Judge = Callable[[Evidence], None]


@dataclass(frozen=True, slots=True)
class ClientCase:
    id: str
    level: RequirementLevel
    category: str
    title: str
    sources: tuple[str, ...]
    rules: tuple[str, ...]
    behaviour: Callable[[Timings], CaseBehaviour]
    turns: Callable[[Timings], tuple[Turn, ...]]
    judge: Judge
    store: bool = False
    parallel: bool = False
    lanes: bool = False
    lifetime: bool = False  # the server runs with the shortened lifetime
    extra_s: Callable[[Timings], float] = field(default=lambda t: 0.0)

    @property
    def section(self) -> str:
        return ".".join(p for p in self.id.split(".")[:2] if p.isdigit())

    def task(self, timings: Timings) -> Task:
        return Task(
            case=self.id,
            turns=self.turns(timings),
            store=self.store,
            parallel=self.parallel,
            timeout_s=timings.bound(self.extra_s(timings)),
        )


def _turns(count: int, gap_ms: int = 0) -> Callable[[Timings], tuple[Turn, ...]]:
    return lambda t: tuple(
        Turn(f"Turn {i}: reply with one short sentence.", delay_ms=gap_ms if i else 0)
        for i in range(count)
    )


def _idle_turns(t: Timings) -> tuple[Turn, ...]:
    return (*_turns(1)(t), Turn("Turn 1: reply with one short sentence.", t.idle_gap_ms))


def _after_lifetime_ms(t: Timings) -> int:
    return int(t.lifetime_s * 1000) + t.idle_gap_ms


def _nothing(t: Timings) -> CaseBehaviour:
    return CaseBehaviour()


# -- judges -------------------------------------------------------------------------------------
def _all_complete(ev: Evidence) -> None:
    for turn in range(len(ev.task.turns)):
        require_completed(ev, turn, "client.outcome", "did not complete")


def _conversation(ev: Evidence) -> None:
    _all_complete(ev)
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


def _upgrade_refused(status: int) -> Judge:
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
        if len(attempts) > STORM_LIMIT:
            span = attempts[-1].at_ms - attempts[0].at_ms
            ev.find(
                "client.retry_storm",
                f"{len(attempts)} upgrade attempts in {span:.0f} ms after a {status}",
            )
        if status == 429 and len(attempts) > 1:
            gap_ms = attempts[1].at_ms - attempts[0].at_ms
            retry_after_s = ev.behaviour.retry_after_s or 0
            if gap_ms < 900 * retry_after_s:
                ev.find(
                    "client.retry_storm",
                    f"retried {gap_ms:.0f} ms after a 429 that asked for Retry-After: "
                    f"{retry_after_s} s",
                )
        if status == 426 and not fell_back:
            ev.find("client.fallback", "no HTTP request followed the 426")
        if fell_back:
            ev.note(f"fell back to HTTP after {len(attempts)} upgrade attempt(s)")

    return judge


def _close_before_101(ev: Evidence) -> None:
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
    if len(ev.watch.upgrades()) > STORM_LIMIT:
        ev.find("client.retry_storm", f"{len(ev.watch.upgrades())} upgrade attempts")


def _drop_mid_stream(ev: Evidence) -> None:
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


def _after_idle_loss(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
    if not require_completed(ev, 1, "client.recovers", "after the idle socket was lost"):
        sent = ev.creates_for(1)
        if not sent:
            ev.note("turn 1 never reached the server: the client did not reconnect")


def _not_found(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
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


def _connection_limit(ev: Evidence) -> None:
    require_completed(ev, 0, "client.outcome", "did not complete")
    if require_completed(ev, 1, "client.recovers", "after websocket_connection_limit_reached"):
        conns = {c.conn for c in ev.creates_for(1)} | {c.conn for c in ev.creates_for(0)}
        if len(conns) < 2 and not ev.watch.http_requests():
            ev.note("turn 1 completed on the expired connection (the server did not close it?)")


def _resends(ev: Evidence) -> None:
    """Turn 0 is answered the same way however often it is sent: note resends, and more than
    STORM_LIMIT of them is a storm."""
    sent = len(ev.creates_for(0))
    if sent > STORM_LIMIT:
        ev.find("client.retry_storm", f"turn 0 was sent {sent} times, answered alike each time")
    elif sent > 1:
        ev.note(f"turn 0 was sent {sent} times before its outcome reached the caller")


def _error_first_turn(code: str, *, detail_rule: str = "client.error_detail") -> Judge:
    def judge(ev: Evidence) -> None:
        require_error(ev, 0, code=code, code_rule=detail_rule)
        _resends(ev)
        require_completed(ev, 1, "client.recovers", "after the error did not complete")

    return judge


def _string_error(ev: Evidence) -> None:
    report = require_error(ev, 0, code=None)
    _resends(ev)
    if report is not None and "invalid_prompt" not in (report.error_message or ""):
        ev.find(
            "client.error_detail",
            f"the server's message did not reach the caller: {describe(report)}",
        )
    require_completed(ev, 1, "client.recovers", "after the error did not complete")


def _response_failed(ev: Evidence) -> None:
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
    _resends(ev)
    require_completed(ev, 1, "client.recovers", "after response.failed did not complete")


def _response_incomplete(ev: Evidence) -> None:
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
    _resends(ev)
    require_completed(ev, 1, "client.recovers", "after response.incomplete did not complete")


def _fifo(ev: Evidence) -> None:
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
    if not _overlapped(ev):
        ev.note("the client sent each create after the previous answer: FIFO held trivially")


def _overlapped(ev: Evidence) -> bool:
    """Did a create arrive while an earlier one on its connection was unanswered?"""
    creates = ev.watch.creates()
    finished = [r.at_ms for r in ev.watch.of_kind("response")]
    return any(sum(1 for t in finished if t < c.at_ms) < i for i, c in enumerate(creates))


def _lanes(ev: Evidence) -> None:
    require_completed(ev, 0, "client.lane", "on lane 'a' did not complete")
    report = require_error(ev, 1, code="invalid_prompt", rule_id="client.lane")
    if report is not None and report.stream_id != "b":
        ev.find(
            "client.lane",
            f"lane b's error reached the caller without its stream_id ({report.stream_id!r})",
        )


def _slow(ev: Evidence) -> None:
    require_completed(ev, 0, "client.patient", "timed out before the slow first token")


def _keepalive(ev: Evidence) -> None:
    _all_complete(ev)


# -- the catalogue ------------------------------------------------------------------------------
_REFUSALS: Final = (
    (401, "invalid_api_key", "openai/codex (401 refreshes auth, PROTOCOL.md §1)"),
    (403, "forbidden", "digitallyinduced/haskell-agent#826 (403 on the upgrade)"),
    (404, "not_found", "BYK/loreai#515 (a burst of GETs after a 404)"),
    (405, "method_not_allowed", "ranxianglei/billion-context#169 (retries before fallback)"),
    (426, "websocket_not_supported", "openai/codex#43353 (426: HTTP fallback)"),
    (429, "rate_limit_exceeded", "cloudflare/agents#2118 (a rejected upgrade retried forever)"),
    (501, "responses_websocket_disabled", "Soju06/codex-lb#1886 (5xx upgrade rejections)"),
)


def _refusal_case(status: int, code: str, source: str) -> ClientCase:
    retry = status == 429

    def behaviour(t: Timings) -> CaseBehaviour:
        return CaseBehaviour(
            refuse_upgrades=1 if retry else 1_000,
            refuse_status=status,
            refuse_code=code,
            retry_after_s=t.retry_after_s if retry else None,
        )

    what = "fall back to HTTP or fail fast" if status == 426 else "fail fast or fall back"
    return ClientCase(
        id=f"1.client.upgrade-{status}",
        level="MUST",
        category="handshake",
        title=f"an upgrade refused with {status}: {what}, no retry storm",
        sources=("docs/PROTOCOL.md §1 (upgrade failure) [C CODEX]", source),
        rules=("client.outcome", "client.error_detail", "client.retry_storm", "client.fallback"),
        behaviour=behaviour,
        turns=_turns(1),
        judge=_upgrade_refused(status),
        extra_s=lambda t: float(t.retry_after_s) if retry else 0.0,
    )


CASES: Final[tuple[ClientCase, ...]] = (
    ClientCase(
        id="3.3.client.conversation",
        level="MUST",
        category="events",
        title="a three-turn conversation completes with the server's text; continuations are "
        "incremental (MAY)",
        sources=("docs/PROTOCOL.md §2.1, §3.3, §5.1 [C WSG1]",),
        rules=("client.outcome", "client.truthful", "client.incremental"),
        behaviour=_nothing,
        turns=_turns(3),
        judge=_conversation,
    ),
    *(_refusal_case(status, code, source) for status, code, source in _REFUSALS),
    ClientCase(
        id="1.client.close-before-101",
        level="MUST",
        category="handshake",
        title="the connection closes before 101: the never-sent create is retried (SHOULD)",
        sources=(
            "docs/PROTOCOL.md §1, §4.3",
            "openai/openai-agents-python#4780 (close before 101 not retried)",
            "openai/openai-agents-js#1458 (a never-sent create marked unsafe to replay)",
        ),
        rules=("client.outcome", "client.safe_retry", "client.retry_storm"),
        behaviour=lambda t: CaseBehaviour(close_before_101=1),
        turns=_turns(1),
        judge=_close_before_101,
    ),
    ClientCase(
        id="4.3.client.drop-mid-stream",
        level="MUST",
        category="errors",
        title="a 1006 mid-stream: the turn's caller gets an error, the sent turn is not "
        "replayed silently, the next turn completes (SHOULD)",
        sources=(
            "docs/PROTOCOL.md §4.3 (close codes), §5.3 (no stream resume)",
            "anomalyco/opencode#29646 (retry only before output)",
            "cloudflare/agents#2013 (a close mid-stream treated as completed)",
        ),
        rules=(
            "client.error_surfaced",
            "client.no_silent_replay",
            "client.truthful",
            "client.recovers",
        ),
        behaviour=lambda t: CaseBehaviour(drop_after_deltas=3),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_drop_mid_stream,
        store=True,
    ),
    ClientCase(
        id="4.3.client.drop-idle",
        level="SHOULD",
        category="errors",
        title="the idle socket is dropped (1006) between turns: the next turn, never sent, "
        "goes out on a new connection and completes",
        sources=(
            "docs/PROTOCOL.md §4.3 (openai-python reconnects on 1006), §5.3",
            "digitallyinduced/haskell-agent#83 (reconnect dead sockets)",
        ),
        rules=("client.recovers",),
        behaviour=lambda t: CaseBehaviour(after_response="drop"),
        turns=_idle_turns,
        judge=_after_idle_loss,
        store=True,
    ),
    ClientCase(
        id="4.3.client.close-1001-idle",
        level="SHOULD",
        category="errors",
        title="the server closes the idle socket with 1001 (going away): the next turn "
        "completes on a new connection",
        sources=("docs/PROTOCOL.md §4.3 (1001 is recoverable for openai-python) [C PY]",),
        rules=("client.recovers",),
        behaviour=lambda t: CaseBehaviour(after_response="close-1001"),
        turns=_idle_turns,
        judge=_after_idle_loss,
        store=True,
    ),
    ClientCase(
        id="5.1.client.previous-response-not-found",
        level="SHOULD",
        category="continuation",
        title="previous_response_not_found: the turn is resent with the full context, "
        "without the missing id",
        sources=(
            "docs/PROTOCOL.md §4.3, §5.1 (retry with previous_response_id null and the full "
            "input) [C WSG1, ALPHA]",
            "Effect-TS/effect#8355",
            "openclaw/openclaw#122717",
        ),
        rules=("client.full_context",),
        behaviour=lambda t: CaseBehaviour(miss_continuations=1),
        turns=_turns(2),
        judge=_not_found,
    ),
    ClientCase(
        id="5.3.client.connection-limit",
        level="SHOULD",
        category="errors",
        title="websocket_connection_limit_reached (a shortened lifetime), then the next turn "
        "completes on a fresh connection",
        sources=(
            "docs/PROTOCOL.md §4.2, §5.3 [C WSG1, CODEX]",
            "openclaw/openclaw#122727 (the limit error hidden, the turn failed)",
        ),
        rules=("client.recovers",),
        behaviour=_nothing,
        turns=lambda t: (
            Turn("Turn 0: reply with one short sentence."),
            Turn("Turn 1: reply with one short sentence.", _after_lifetime_ms(t)),
        ),
        judge=_connection_limit,
        store=True,
        lifetime=True,
        extra_s=lambda t: t.lifetime_s,
    ),
    ClientCase(
        id="4.1.client.error-nested",
        level="MUST",
        category="errors",
        title="an error event in the API's nested shape ends the turn with its code; the next "
        "turn completes (SHOULD)",
        sources=(
            "docs/PROTOCOL.md §4.1 [C OAS, PY]",
            "anomalyco/opencode#50848 (hangs after an error event)",
        ),
        rules=("client.error_surfaced", "client.error_detail", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(error_for_create=0),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_error_first_turn("invalid_prompt"),
    ),
    ClientCase(
        id="10.client.error-flat",
        level="MUST",
        category="errors",
        title="an error event in the flat shape (openai-node's type) ends the turn; its code "
        "reaches the caller (SHOULD)",
        sources=("docs/PROTOCOL.md §10 (flat error) [C NODE]", "anomalyco/opencode#50848"),
        rules=("client.error_surfaced", "client.error_detail", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(error_for_create=0, error_shape="flat"),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_error_first_turn("invalid_prompt"),
    ),
    ClientCase(
        id="4.1.client.error-string",
        level="SHOULD",
        category="errors",
        title="an error event whose `error` is a string: no crash, the turn ends in an error "
        "with the message",
        sources=(
            "docs/PROTOCOL.md §4.1, §3.2 (clients ignore what they do not know)",
            "the opencode crash on a string error (PROTOCOL notes, client bugs) [T]",
        ),
        rules=("client.error_surfaced", "client.error_detail", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(error_for_create=0, error_shape="string"),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_string_error,
    ),
    ClientCase(
        id="3.3.client.response-failed",
        level="MUST",
        category="events",
        title="error + response.failed mid-stream: the turn fails with error.code and the "
        "response id; the next turn completes (SHOULD)",
        sources=(
            "docs/PROTOCOL.md §4.1, §9 (error then response.failed) [C VAI]",
            "pipecat-ai/pipecat#5575 (error.code and the id dropped)",
        ),
        rules=(
            "client.terminal",
            "client.error_surfaced",
            "client.error_detail",
            "client.recovers",
        ),
        behaviour=lambda t: CaseBehaviour(fail_after_deltas=2, fail_code="invalid_prompt"),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_response_failed,
    ),
    ClientCase(
        id="3.3.client.response-incomplete",
        level="MUST",
        category="events",
        title="response.incomplete is terminal: the turn ends incomplete with its reason",
        sources=(
            "docs/PROTOCOL.md §3.3, §3.4 [C PY]",
            "livekit/agents#7013 (hangs after response.incomplete)",
            "openai/openai-agents-python#3106",
        ),
        rules=("client.terminal", "client.error_detail", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(incomplete_for_create=0),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=_response_incomplete,
    ),
    ClientCase(
        id="3.2.client.unknown-event",
        level="MUST",
        category="events",
        title="`keepalive` events mid-stream (numbered, as live streams send them) are "
        "tolerated: every turn completes with the server's text",
        sources=(
            "docs/PROTOCOL.md §3.2 (clients ignore unknown types) [C CODEX]",
            "openai/openai-node#1964 (keepalive ended the stream)",
        ),
        rules=("client.outcome", "client.truthful"),
        behaviour=lambda t: CaseBehaviour(keepalive_every=3),
        turns=_turns(2),
        judge=_keepalive,
    ),
    ClientCase(
        id="5.2.client.queued-fifo",
        level="MUST",
        category="continuation",
        title="creates sent without waiting are answered FIFO, each to its own caller",
        sources=("docs/PROTOCOL.md §5.2 (queued, one in flight) [C WSG1, ALPHA]",),
        rules=("client.fifo", "client.truthful"),
        behaviour=_nothing,
        turns=_turns(3),
        judge=_fifo,
        parallel=True,
    ),
    ClientCase(
        id="5.2.client.lanes-error",
        level="MUST",
        category="lanes",
        title="named lanes: an error on lane b carries stream_id b to its caller; lane a completes",
        sources=(
            "docs/PROTOCOL.md §4.1, §5.2 [C OAS, PYR]",
            "openai/openai-node#2314 review (error.stream_id unreadable in callbacks)",
        ),
        rules=("client.lane",),
        behaviour=lambda t: CaseBehaviour(error_for_lane="b"),
        turns=lambda t: (
            Turn("Turn 0 on lane a: reply with one short sentence.", stream_id="a"),
            Turn("Turn 1 on lane b: reply with one short sentence.", stream_id="b"),
        ),
        judge=_lanes,
        parallel=True,
        lanes=True,
    ),
    ClientCase(
        id="5.3.client.slow-ttft",
        level="SHOULD",
        category="errors",
        title="a slow first token (the stated bound, `--slow-ttft-s`): the client waits, the "
        "turn completes",
        sources=(
            "docs/PROTOCOL.md §6.3 (codex: idle timeout 300 s) [C CODEX]",
            "reasoning models routinely exceed 10 s to the first token [T]",
        ),
        rules=("client.patient",),
        behaviour=lambda t: CaseBehaviour(first_event_delay_s=t.slow_ttft_s),
        turns=_turns(1),
        judge=_slow,
        extra_s=lambda t: t.slow_ttft_s,
    ),
)

CASE_IDS: Final = tuple(case.id for case in CASES)
_BY_ID: Final = {case.id: case for case in CASES}


def case_by_id(case_id: str) -> ClientCase:
    return _BY_ID[case_id]
