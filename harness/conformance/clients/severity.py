"""The client rules, each graded by the consequence of breaking it, with the source of its level.

A client's fault is graded by what it costs the application, not by how the fault looks:

    lost         a turn's outcome never reaches its caller (a hang, a swallowed terminal, a later
                 turn that fails because an earlier, recoverable event ended the session)   MUST
    mixed        a turn is handed another turn's outcome (FIFO, a leftover response.failed,
                 an error without its lane)                                                  MUST
    forbidden    the client sends a request the protocol rules out (a continuation of an
                 unfinished response, of a store=false id on a connection that never saw it,
                 of an id the server said was not found; an upgrade without credentials)   MUST
    storm        retries graded by their count against RETRY_BUDGET (below): over it SHOULD,
                 at STORM_MUST_FACTOR times it MUST
    degraded     the caller is told, but with less than the server said (no code, no id)   SHOULD
    performance  a cheaper way was open (incremental continuations, HTTP fallback)          MAY

Each rule names the source its level rests on; `wsmode certify-client --list` and the README
show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from harness.protocol.levels import RequirementLevel

Consequence = Literal["lost", "mixed", "forbidden", "storm", "degraded", "performance"]

CONSEQUENCE_LEVELS: Final[dict[Consequence, RequirementLevel]] = {
    "lost": "MUST",
    "mixed": "MUST",
    "forbidden": "MUST",
    "storm": "MUST",  # the strongest a storm can reach; each finding is graded by its count
    "degraded": "SHOULD",
    "performance": "MAY",
}

# Attempts one turn may take (upgrades for one refused turn, or sends of one turn answered the
# same way) before it is a storm: codex's own budget for a refused upgrade is 5 (PROTOCOL.md
# §6.3), openai-python's reconnect budget 5 (§4.3); 3 leaves a client one retry per failure
# class (connect, refusal, transient) and is what the Autobahn-style case budget states.
RETRY_BUDGET: Final = 3
STORM_MUST_FACTOR: Final = 10  # at 10 x the budget (30 attempts) a storm is load on the server
STORM_SOURCE: Final = (
    "RFC 9110 §10.2.3 (Retry-After); docs/PROTOCOL.md §1, §6.3 (codex retries a refused upgrade "
    "5 times); cloudflare/agents#2118 (a rejected upgrade retried forever)"
)


@dataclass(frozen=True, slots=True)
class ClientRule:
    consequence: Consequence
    text: str
    source: str  # where the level comes from

    @property
    def level(self) -> RequirementLevel:
        return CONSEQUENCE_LEVELS[self.consequence]


CLIENT_RULES: Final[dict[str, ClientRule]] = {
    "client.no_hang": ClientRule(
        "lost",
        "the client finishes the task within the case's bound",
        "docs/PROTOCOL.md §3.3 (every response ends in one terminal event); "
        "anomalyco/opencode#50848 (hangs after an error event)",
    ),
    "client.outcome": ClientRule(
        "lost",
        "every turn's outcome reaches the caller: one report per turn, no crash",
        "docs/PROTOCOL.md §3.3; the adapter contract (suites/clients/README.md)",
    ),
    "client.report_format": ClientRule(
        "lost",
        "the adapter's stdout holds JSON turn reports only",
        "the adapter contract (suites/clients/README.md): an unreadable report is no outcome",
    ),
    "client.truthful": ClientRule(
        "mixed",
        "a turn reported completed is a response the server completed, with its whole text",
        "docs/PROTOCOL.md §3.3 (response.completed carries the whole Response); "
        "cloudflare/agents#2013 (a close mid-stream treated as completed)",
    ),
    "client.own_outcome": ClientRule(
        "mixed",
        "a turn is handed only the response the server made for its own create",
        "docs/PROTOCOL.md §5.2 (one in flight, FIFO); pydantic-ai and @openai/agents with ws "
        "hand the next turn a leftover response.failed (wsmode issue 38)",
    ),
    "client.fresh_chain": ClientRule(
        "mixed",
        "a new conversation's first turn names no previous_response_id of an earlier one",
        "openai/codex#42787 (a reused socket's response chain leaks into the next turn), "
        "openclaw/openclaw#44945 (a stale connection-global previous_response_id)",
    ),
    "client.error_surfaced": ClientRule(
        "lost",
        "a server error ends that turn with an error outcome carrying the server's code",
        "docs/PROTOCOL.md §4.1, §9 (error, then response.failed); pipecat-ai/pipecat#5575",
    ),
    "client.error_detail": ClientRule(
        "degraded",
        "the caller's error carries the server's status or code and its message",
        "docs/PROTOCOL.md §4.1 (the nested error with status and code)",
    ),
    "client.no_silent_replay": ClientRule(
        "forbidden",
        "a create the server received is not sent again without telling the caller",
        "docs/PROTOCOL.md §5.3 (no stream resume: a received create may have run); "
        "anomalyco/opencode#29646 (retry only before output)",
    ),
    "client.retry_storm": ClientRule(
        "storm",
        f"a refused upgrade or a refused turn is tried at most {RETRY_BUDGET} times, and not "
        f"again before Retry-After (SHOULD over the budget, MUST at {STORM_MUST_FACTOR} times it)",
        STORM_SOURCE,
    ),
    "client.safe_retry": ClientRule(
        "degraded",
        "a create that never reached the server is sent once the connection is back",
        "openai/openai-agents-js#1458, openai/openai-agents-python#4780 (the caller is told, "
        "and may retry itself)",
    ),
    "client.recovers": ClientRule(
        "lost",
        "after a failed turn or a lost connection, the next turn completes",
        "docs/PROTOCOL.md §4.3 (request-scoped errors keep the socket open; 1001 and 1006 "
        "are recoverable), §5.3 (a reconnect with the full context)",
    ),
    "client.full_context": ClientRule(
        "degraded",
        "after previous_response_not_found the turn is resent with the full context",
        "docs/PROTOCOL.md §4.3, §5.1 (retry with previous_response_id null and the full "
        "input); Effect-TS/effect#8355 (the caller is told, and may resend itself)",
    ),
    "client.dead_id": ClientRule(
        "forbidden",
        "an id the server answered previous_response_not_found for is not continued again",
        "docs/PROTOCOL.md §5.1 (failure eviction; retry with previous_response_id null); "
        "openclaw/openclaw#122717",
    ),
    "client.terminal": ClientRule(
        "lost",
        "response.incomplete and response.failed end the turn with that status",
        "docs/PROTOCOL.md §3.3, §3.4; livekit/agents#7013",
    ),
    "client.lane": ClientRule(
        "mixed",
        "an error on a lane reaches that lane's caller, with its stream_id",
        "docs/PROTOCOL.md §4.1, §5.2 (lane errors carry stream_id); openai/openai-node#2314",
    ),
    "client.fifo": ClientRule(
        "mixed",
        "queued responses are given to their creates in FIFO order",
        "docs/PROTOCOL.md §5.2 (queued creates start after the one in progress)",
    ),
    "client.chain_after_terminal": ClientRule(
        "forbidden",
        "a continuation names a previous_response_id only after that response's terminal "
        "event on its lane",
        "docs/PROTOCOL.md §5.2 (one in flight per lane; the parent's outcome is unknown until "
        "its terminal), §5.1 (a failed turn evicts its parent)",
    ),
    "client.store_false_scope": ClientRule(
        "forbidden",
        "with store=false an id is continued only on the connection that produced it",
        "docs/PROTOCOL.md §5.1 (no fallback with store=false: an id from another socket or "
        "after a reconnect is not found), §5.3; ORS websocket-reconnect-store-false-recovery",
    ),
    "client.authorized": ClientRule(
        "forbidden",
        "every upgrade, reconnects included, carries the Authorization the first one did",
        "docs/PROTOCOL.md §1 and §7 item 1 (Bearer upgrade; bad auth rejected pre-upgrade)",
    ),
    "client.clean_close": ClientRule(
        "degraded",
        "the client ends each connection it opened with a close frame, not a dropped socket",
        "RFC 6455 §7.1.1-§7.1.2 (start the closing handshake), §7.1.5 (1006: closed abnormally)",
    ),
    "client.patient": ClientRule(
        "degraded",
        "no client-side timeout below the case's stated TTFT bound",
        "docs/PROTOCOL.md §6.3 (codex: idle timeout 300 s); a client's own timeout is its "
        "policy, told to the caller",
    ),
    "client.incremental": ClientRule(
        "performance",
        "a continuation sends previous_response_id and only the new items, on the same socket",
        "docs/PROTOCOL.md §5.1 (the connection cache: only new items are rendered)",
    ),
    "client.fallback": ClientRule(
        "performance",
        "a 426 upgrade makes the client fall back to HTTP at once",
        "docs/PROTOCOL.md §6.3 (codex falls back on 426)",
    ),
}


def client_rule_level(rule_id: str) -> RequirementLevel:
    return CLIENT_RULES[rule_id].level


def storm_level(count: int, budget: int = RETRY_BUDGET) -> RequirementLevel | None:
    """The level of `count` attempts against `budget`: None within it."""
    if count <= budget:
        return None
    return "MUST" if count >= budget * STORM_MUST_FACTOR else "SHOULD"
