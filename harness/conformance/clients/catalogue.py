"""The client cases: each a server behaviour a real client got wrong, and how it is judged.

A case names its server behaviour (`faults.CaseBehaviour`), the task the adapter gets, and a
judge that reads what the server observed and what the caller was told. Ids start with the
docs/PROTOCOL.md section of the behaviour. Each finding is graded by the consequence of the rule
it breaks (`severity`: a lost or mixed-up turn and a forbidden request are MUST, a storm by its
count, a degraded answer SHOULD, a slower path MAY), whichever case sees it; a case's level is the
strongest of its own rules. `sources` names the protocol section and the public issue or pull
request where a client was seen to fail it; each rule names the source of its level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from harness.conformance.clients import case_judges as judges
from harness.conformance.clients.case_judges import Judge
from harness.conformance.clients.client_config import Timings
from harness.conformance.clients.contract import Task, Turn
from harness.conformance.clients.severity import CLIENT_RULES
from harness.protocol.levels import REQUIREMENT_LEVELS, RequirementLevel
from reference_server.hooks.faults import CaseBehaviour

# Judged in every case (judging.common_checks, wire_rules.wire_checks), whatever it is about.
COMMON_RULES: Final = (
    "client.no_hang",
    "client.outcome",
    "client.report_format",
    "client.truthful",
    "client.own_outcome",
    "client.chain_after_terminal",
    "client.store_false_scope",
    "client.dead_id",
    "client.authorized",
)


@dataclass(frozen=True, slots=True)
class ClientCase:
    id: str
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
    max_message_bytes: int | None = None  # the server's frame limit, when the case sets one
    extra_s: Callable[[Timings], float] = field(default=lambda t: 0.0)

    @property
    def level(self) -> RequirementLevel:
        """The strongest level its own rules grade at (each finding is graded by the
        consequence of its rule: `severity`)."""
        levels = {CLIENT_RULES[rule].level for rule in self.rules}
        return next(level for level in REQUIREMENT_LEVELS if level in levels)

    @property
    def source_of_level(self) -> str:
        """Where the case's level comes from: the source of its strongest rule."""
        level = self.level
        rule = next(r for r in self.rules if CLIENT_RULES[r].level == level)
        return f"{rule}: {CLIENT_RULES[rule].source}"

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


BIG_INPUT_BYTES: Final = 40 * 1024  # over 32 KiB: a tool output or a pasted file
BIG_REPLY_TOKENS: Final = 8000  # an answer whose terminal event is a frame over 32 KiB (~36)
FIELD_FRAME_LIMIT_BYTES: Final = 32 * 1024  # the frame limit the over-limit case's server sets


def _big_turns(t: Timings) -> tuple[Turn, ...]:
    filler = " ".join("tool-output-line" for _ in range(BIG_INPUT_BYTES // 17))
    return (
        Turn(f"Turn 0: this is a large tool output; reply with one short sentence. {filler}"),
        Turn("Turn 1: reply with one short sentence.", t.idle_gap_ms),
    )


def _two_tasks(t: Timings) -> tuple[Turn, ...]:
    return (
        *_turns(2)(t),
        Turn("Turn 2, a new task: reply with one short sentence.", new_conversation=True),
    )


def _nothing(t: Timings) -> CaseBehaviour:
    return CaseBehaviour()


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
        category="handshake",
        title=f"an upgrade refused with {status}: {what}, no retry storm",
        sources=("docs/PROTOCOL.md §1 (upgrade failure) [C CODEX]", source),
        rules=("client.outcome", "client.error_detail", "client.retry_storm", "client.fallback"),
        behaviour=behaviour,
        turns=_turns(1),
        judge=judges.upgrade_refused(status),
        extra_s=lambda t: float(t.retry_after_s) if retry else 0.0,
    )


_BASE: Final[tuple[ClientCase, ...]] = (
    ClientCase(
        id="3.3.client.conversation",
        category="events",
        title="a three-turn conversation completes with the server's text, and its connection "
        "ends with a close frame (SHOULD); continuations are incremental (MAY)",
        sources=("docs/PROTOCOL.md §2.1, §3.3, §5.1 [C WSG1]",),
        rules=("client.outcome", "client.truthful", "client.clean_close", "client.incremental"),
        behaviour=_nothing,
        turns=_turns(3),
        judge=judges.conversation,
    ),
    *(_refusal_case(status, code, source) for status, code, source in _REFUSALS),
    ClientCase(
        id="1.client.close-before-101",
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
        judge=judges.close_before_101,
    ),
    ClientCase(
        id="4.3.client.drop-mid-stream",
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
        judge=judges.drop_mid_stream,
        store=True,
    ),
    ClientCase(
        id="4.3.client.drop-idle",
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
        judge=judges.after_idle_loss,
        store=True,
    ),
    ClientCase(
        id="4.3.client.close-1001-idle",
        category="errors",
        title="the server closes the idle socket with 1001 (going away): the next turn "
        "completes on a new connection",
        sources=("docs/PROTOCOL.md §4.3 (1001 is recoverable for openai-python) [C PY]",),
        rules=("client.recovers",),
        behaviour=lambda t: CaseBehaviour(after_response="close-1001"),
        turns=_idle_turns,
        judge=judges.after_idle_loss,
        store=True,
    ),
    ClientCase(
        id="5.1.client.previous-response-not-found",
        category="continuation",
        title="previous_response_not_found: the turn is resent with the full context, "
        "without the missing id",
        sources=(
            "docs/PROTOCOL.md §4.3, §5.1 (retry with previous_response_id null and the full "
            "input) [C WSG1, ALPHA]",
            "Effect-TS/effect#8355",
            "openclaw/openclaw#122717",
        ),
        rules=("client.full_context", "client.dead_id"),
        behaviour=lambda t: CaseBehaviour(miss_continuations=1),
        turns=_turns(2),
        judge=judges.not_found,
    ),
    ClientCase(
        id="5.3.client.connection-limit",
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
        judge=judges.connection_limit,
        store=True,
        lifetime=True,
        extra_s=lambda t: t.lifetime_s,
    ),
    ClientCase(
        id="4.1.client.error-nested",
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
        judge=judges.error_first_turn("invalid_prompt"),
    ),
    ClientCase(
        id="10.client.error-flat",
        category="errors",
        title="an error event in the flat shape (openai-node's type) ends the turn; its code "
        "reaches the caller (SHOULD)",
        sources=("docs/PROTOCOL.md §10 (flat error) [C NODE]", "anomalyco/opencode#50848"),
        rules=("client.error_surfaced", "client.error_detail", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(error_for_create=0, error_shape="flat"),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=judges.error_first_turn("invalid_prompt"),
    ),
    ClientCase(
        id="4.1.client.error-string",
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
        judge=judges.string_error,
    ),
    ClientCase(
        id="3.3.client.response-failed",
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
        judge=judges.response_failed,
    ),
    ClientCase(
        id="3.3.client.response-incomplete",
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
        judge=judges.response_incomplete,
    ),
    ClientCase(
        id="3.2.client.unknown-event",
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
        judge=judges.keepalive,
    ),
    ClientCase(
        id="5.2.client.queued-fifo",
        category="continuation",
        title="creates sent without waiting are answered FIFO, each to its own caller",
        sources=("docs/PROTOCOL.md §5.2 (queued, one in flight) [C WSG1, ALPHA]",),
        rules=("client.fifo", "client.truthful"),
        behaviour=_nothing,
        turns=_turns(3),
        judge=judges.fifo,
        parallel=True,
    ),
    ClientCase(
        id="5.2.client.chain-after-terminal",
        category="continuation",
        title="a slow answer (created at once, its output 0.5 s later): the next turn is sent "
        "after its terminal, not on response.created",
        sources=(
            "docs/PROTOCOL.md §5.2 (one in flight per lane), §5.1 (a failed turn evicts its "
            "parent)",
            "wsmode issue 38 (a client that chained on response.created passed every case)",
        ),
        rules=("client.chain_after_terminal", "client.outcome"),
        behaviour=lambda t: CaseBehaviour(first_event_delay_s=0.5),
        turns=_turns(2),
        judge=judges.all_complete,
        extra_s=lambda t: 1.0,
    ),
    ClientCase(
        id="5.2.client.lanes-error",
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
        judge=judges.lanes,
        parallel=True,
        lanes=True,
    ),
    ClientCase(
        id="5.1.client.history-resent",
        category="continuation",
        title="four turns on one socket that holds each previous response: the bytes a client "
        "resends instead of continuing are reported (performance)",
        sources=(
            "docs/PROTOCOL.md §5.1 (the connection cache renders only the new items)",
            "strands-agents/harness-sdk#1957 (the full history resent every turn)",
            "SamSaffron/term-llm#667 (the whole transcript rebuilt before each reused request)",
        ),
        rules=("client.outcome", "client.incremental"),
        behaviour=_nothing,
        turns=_turns(4),
        judge=judges.history_resent,
    ),
    ClientCase(
        id="4.3.client.drop-before-created",
        category="errors",
        title="an ambiguous failure: the server receives turn 0's create and drops the socket "
        "before any event; the caller gets an outcome, a resend stays within the budget, "
        "turn 1 completes",
        sources=(
            "docs/PROTOCOL.md §5.3 (no stream resume: a received create may have run)",
            "bman654/clodex#29 (replay only before the first frame)",
            "fastly/pushpin#47619 (no retry once the request was submitted)",
            "Soju06/codex-lb#415 (safe replay only before response.created)",
        ),
        rules=("client.outcome", "client.retry_storm", "client.recovers"),
        behaviour=lambda t: CaseBehaviour(drop_before_created=True),
        turns=lambda t: _turns(2, t.idle_gap_ms)(t),
        judge=judges.ambiguous_failure,
    ),
    ClientCase(
        id="1.client.frame-over-32k",
        category="handshake",
        title="a 40 KiB message (a large tool output) under the server's 4 MiB limit, and an "
        "answer whose terminal event is over 32 KiB: the turn completes",
        sources=(
            "docs/PROTOCOL.md §1 (the reference server's --max-message-bytes, close 1009)",
            "Soju06/codex-lb#390 (large tool outputs in response.create)",
            "lidge-jun/opencodex#2426 (large Responses requests over WebSocket)",
        ),
        rules=("client.outcome", "client.truthful"),
        behaviour=lambda t: CaseBehaviour(reply_tokens=BIG_REPLY_TOKENS),
        turns=lambda t: _big_turns(t)[:1],
        judge=judges.all_complete,
        extra_s=lambda t: BIG_REPLY_TOKENS / 2000 + 2,  # 8,000 deltas at the cases' 2,000/s
    ),
    ClientCase(
        id="1.client.frame-over-limit",
        category="handshake",
        title="a 40 KiB message over a 32 KiB frame limit: the server closes 1009; the caller "
        "gets an error, the oversized create is not resent past the budget, turn 1 completes",
        sources=(
            "RFC 6455 §7.4.1 (1009: message too big)",
            "anomalyco/opencode#42572 (the same oversized create retried five times)",
            "router-for-me/CLIProxyAPI#4409 (1009 retried with other credentials)",
        ),
        rules=("client.error_surfaced", "client.retry_storm", "client.recovers"),
        behaviour=_nothing,
        turns=_big_turns,
        judge=judges.over_frame_limit,
        max_message_bytes=FIELD_FRAME_LIMIT_BYTES,
    ),
    ClientCase(
        id="5.1.client.stale-id-next-task",
        category="continuation",
        title="a second task on the same client after a two-turn one: its first turn carries no "
        "previous_response_id of the first task",
        sources=(
            "openai/codex#42787 (the response chain leaks across turns on a reused socket)",
            "openclaw/openclaw#44945 (a stale connection-global previous_response_id)",
            "stippi/code-assistant#200 (a reused socket with an abandoned response)",
        ),
        rules=("client.fresh_chain", "client.outcome"),
        behaviour=_nothing,
        turns=_two_tasks,
        judge=judges.fresh_task,
    ),
    ClientCase(
        id="5.3.client.slow-ttft",
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
        judge=judges.slow,
        extra_s=lambda t: t.slow_ttft_s,
    ),
)

# The reconnect cases run again with store=false: no id outlives its connection, so the turn after
# the reconnect must carry the full context (PROTOCOL.md §5.1, §5.3). (drop-mid-stream has no id
# to carry over: its cut turn never completed.)
_RECONNECTS: Final = (
    "4.3.client.drop-idle",
    "4.3.client.close-1001-idle",
    "5.3.client.connection-limit",
)


def _store_false(case: ClientCase) -> ClientCase:
    return dataclasses.replace(
        case,
        id=f"{case.id}-store-false",
        title=f"{case.title}; store=false: the next turn carries the full context, no dead id",
        sources=(
            *case.sources,
            "docs/PROTOCOL.md §5.1, §5.3 (store=false: a reconnect loses "
            "every id) [C WSG1; ORS websocket-reconnect-store-false-recovery]",
        ),
        rules=(*case.rules, "client.store_false_scope"),
        store=False,
    )


CASES: Final[tuple[ClientCase, ...]] = tuple(
    variant
    for base in _BASE
    for variant in ((base, _store_false(base)) if base.id in _RECONNECTS else (base,))
)
CASE_IDS: Final = tuple(case.id for case in CASES)
_BY_ID: Final = {case.id: case for case in CASES}


def case_by_id(case_id: str) -> ClientCase:
    return _BY_ID[case_id]
