"""Every rule id a conformance case can report, with its level and meaning.

The stream rules come from the protocol core (`harness.protocol.stream_rules.RULES`); the rules
below are the ones only a checker driving a live target can see (handshake, cache, queueing,
limits, HTTP parity, the SDK's second opinion). Ids are stable: cases, reports and the kill
matrix refer to them.
"""

from __future__ import annotations

from typing import Final

from harness.protocol.levels import RequirementLevel, as_requirement
from harness.protocol.stream_rules import RULES as STREAM_RULES

HARNESS_RULES: Final[dict[str, tuple[RequirementLevel, str]]] = {
    # transport: what a misbehaving target looks like from the client
    "transport.stall": ("MUST", "every awaited event arrives within the event timeout"),
    "transport.endless": (
        "MUST",
        "a response reaches its terminal event within the response timeout (never streams or "
        "drips forever)",
    ),
    "transport.closed": ("MUST", "the target keeps the socket open unless the protocol closes it"),
    "transport.garbage": ("MUST", "server frames are text frames holding one JSON object each"),
    "transport.refused": ("MUST", "the target accepts a well-formed, authorized upgrade"),
    "transport.error": ("MUST", "the target is reachable and speaks WebSocket/HTTP"),
    "case.timeout": ("MUST", "the case finishes within its time budget"),
    "case.expectation": ("MUST", "the case's stated expectation holds"),
    "transport.stopped": ("MUST", "the target keeps answering for the whole run"),
    # handshake (PROTOCOL.md §1)
    "handshake.upgrade": ("MUST", "a bearer-authenticated upgrade gets 101"),
    "handshake.subprotocol": ("MUST", "no subprotocol is required, none is selected"),
    "handshake.beta_header": ("MUST", "OpenAI-Beta is optional: accepted, never required"),
    "auth.before_upgrade": (
        "MUST",
        "a missing or wrong key is refused with 401 before the upgrade",
    ),
    "auth.error_body": ("SHOULD", "the 401 body is JSON {error: {type, code, message, param}}"),
    "ws.ping": ("MUST", "a WebSocket ping is answered with a pong"),
    "ws.close_handshake": ("MUST", "a client close is answered with a close frame"),
    "ws.binary_refused": (
        "MUST",
        "a binary frame is refused with an error event and/or a clean close frame (any code: "
        "close codes are not documented), never a dropped connection (1006)",
    ),
    "ws.binary_close_code": ("MAY", "the close after a binary frame uses 1003"),
    "ws.isolation": ("MUST", "one connection dropping mid-stream does not affect another"),
    # requests (§2.1)
    "request.stream_ignored": ("MUST", "stream:true is accepted and ignored over WebSocket"),
    "request.unknown_fields": ("MUST", "unknown create fields (client_metadata) are tolerated"),
    "request.background_rejected": (
        "SHOULD",
        "background:true is refused over WebSocket (the docs say it is not supported; that it "
        "is refused with an error, not ignored, is inferred)",
    ),
    "request.max_output_minimum": (
        "SHOULD",
        "max_output_tokens below 16 is refused with 400 integer_below_min_value (the live API's "
        "answer as reported from api.openai.com and Azure; no document states the minimum)",
    ),
    "request.conversation_exclusive": (
        "MUST",
        "conversation with previous_response_id is refused with a 400, not resolved as a parent "
        "(openai-python: previous_response_id 'cannot be used in conjunction with conversation')",
    ),
    "request.error_socket_open": ("MUST", "a request-scoped error keeps the socket usable"),
    "request.malformed_json": ("MUST", "a frame that is not JSON gets an error event"),
    "request.unknown_type": ("MUST", "an unknown client event type gets an error event"),
    "request.invalid_input": ("MUST", "an invalid input item is refused with a 400 error"),
    "error.code": ("MUST", "the error carries the protocol's code for the situation"),
    "error.status": ("SHOULD", "request-level errors carry the HTTP-equivalent status"),
    # continuation (§2.1, §5.1)
    "continuation.works": ("MUST", "a continuation with only new items completes"),
    "continuation.echo": ("MUST", "the response echoes previous_response_id"),
    "continuation.context_carried": (
        "MUST",
        "a continuation's input_tokens cover the parent's input and visible output plus the new "
        "items (usage-based, tolerance in harness/conformance/judges/carried.py)",
    ),
    "continuation.recall": ("SHOULD", "a real model recalls what an earlier turn of a chain said"),
    "continuation.instructions": (
        "MUST",
        "instructions are not inherited via previous_response_id",
    ),
    "continuation.unknown_call_id": (
        "MUST",
        "a function_call_output for an unknown call is refused",
    ),
    "function_call.emitted": ("MUST", "tool_choice required/named yields a function_call item"),
    "function_call.round_trip": ("MUST", "a function_call_output answering the call completes"),
    "generate_false.no_output": ("MUST", "generate:false completes with no output"),
    "generate_false.chainable": ("MUST", "a warm-up id chains with input: []"),
    "failed.socket_open": ("SHOULD", "after a response.failed the socket stays usable"),
    "incomplete.max_output_tokens": (
        "MUST",
        "a response cut by max_output_tokens ends with response.incomplete and "
        "incomplete_details.reason, never response.completed",
    ),
    "incomplete.content_filter": ("MUST", "filtered output ends incomplete with content_filter"),
    "response.created_snapshot": ("SHOULD", "response.created: in_progress, output [], usage null"),
    "response.member_values": (
        "MUST",
        "Response members hold their values: object 'response', metadata an object (never null), "
        "error null or {code, message}, incomplete_details null or {reason}",
    ),
    "response.usual_members": (
        "SHOULD",
        "a terminal Response carries every member api.openai.com sends (background, penalties, "
        "top_logprobs, max_tool_calls, safety_identifier, ...) with the values the request implies",
    ),
    "response.optional_members": (
        "MAY",
        "usage.input_tokens_details carries cache_write_tokens (openai-python 3.57 requires it)",
    ),
    "response.id_prefix": ("SHOULD", "ids use the API prefixes (resp_, msg_, fc_, rs_)"),
    "usage.null_until_terminal": ("SHOULD", "usage is null before the terminal event"),
    # connection cache (§5.1)
    "cache.store_false_miss": ("MUST", "an uncached store=false id is previous_response_not_found"),
    "cache.per_connection": ("MUST", "a connection cache is never visible to another connection"),
    "cache.hydrate": ("MUST", "a store=true id resolves from anywhere (hydration)"),
    "cache.most_recent": ("MUST", "the most recent response is always continuable"),
    "cache.failure_evicts": ("MUST", "a failed continuation evicts its parent"),
    "cache.every_failure_evicts": (
        "MUST",
        "a continuation refused for any cause (a wrong field type, a bad value, an invalid item) "
        "evicts its parent: 'If a turn fails (4xx or 5xx)'",
    ),
    "cache.block_rule": (
        "SHOULD",
        "usage's cached_tokens is 0 under 1,024 prompt tokens and otherwise 0 or a multiple of 128 "
        "(OpenAI's prompt-caching guide; every recorded api.openai.com and Azure value)",
    ),
    "cache.lru": ("MUST", "a declared depth-N cache evicts the least recently used entry"),
    "cache.depth": ("MUST", "a declared depth-N cache keeps the N most recent responses"),
    "cache.bytes": ("SHOULD", "a declared byte bound evicts older entries when exceeded"),
    # queueing, lanes, lifetime, size (§5.2, §5.3, docs/RELIABILITY.md)
    "queue.fifo": ("MUST", "creates on one socket run in order, one at a time"),
    "queue.no_drop": ("MUST", "every create gets a response or an error, never silence"),
    "lanes.echo": ("MUST", "events of a named lane carry its stream_id"),
    "lanes.default_no_stream_id": ("SHOULD", "default-lane events carry no stream_id"),
    "lanes.invalid": (
        "MUST",
        "stream_id is 1-256 of [A-Za-z0-9_.-]; a malformed one is refused with invalid_stream_id",
    ),
    "lanes.concurrent": ("MUST", "different lanes run concurrently: their responses overlap"),
    "lanes.fifo": ("MUST", "creates on one lane run in order, one at a time"),
    "lanes.active_queued": (
        "MUST",
        "creates beyond the 16 active responses are queued, not refused",
    ),
    "lanes.limit": (
        "MUST",
        "a named lane beyond the limit gets websocket_stream_limit_reached (stream_id echoed)",
    ),
    "lanes.default_not_counted": ("MUST", "the default lane does not count against the lane limit"),
    "lanes.fork": ("MUST", "a continuation may name a parent from another lane of the connection"),
    "lanes.fork_error_keeps_parent": (
        "MUST",
        "an errored cross-lane fork does not evict the shared parent from its own lane",
    ),
    "lifetime.error": ("MUST", "an aged socket gets websocket_connection_limit_reached"),
    "lifetime.close": ("MUST", "the aged socket is closed after the error"),
    "lifetime.close_code": ("MAY", "the lifetime close uses code 1000"),
    "connections.limit": (
        "MUST",
        "the connection past the declared limit is refused (an HTTP status on the upgrade, or an "
        "error event and/or a close frame), never served, never met with silence or a drop",
    ),
    "connections.within_limit": ("MUST", "every connection up to the declared limit is served"),
    "connections.freed": ("MUST", "a closed connection frees its place: a new one is served"),
    "limits.max_message": ("MUST", "an over-size message is refused (close 1009 or an error)"),
    "limits.max_message_code": ("MAY", "the over-size close uses code 1009"),
    # HTTP / SSE parity (§3.1)
    "sse.content_type": ("MUST", "a streaming POST answers 200 text/event-stream"),
    "sse.event_name": ("SHOULD", "each SSE block's event: line equals its data's type"),
    "sse.no_done": ("SHOULD", "SSE streams end after the terminal, without [DONE]"),
    "output.structured": (
        "SHOULD",
        "with text.format json_schema (strict) the reply's text parses as JSON valid against the "
        "schema, with json_object as a JSON object (the structured-outputs guide; clients parse "
        "it)",
    ),
    "http.background": (
        "SHOULD",
        "POST /responses with background:true answers at once (queued or in_progress, "
        "background:true), GET polls it to its end, ?stream=true&starting_after=N resumes its "
        "events after N, POST /responses/{id}/cancel answers its state (the background guide; "
        "recorded openai-dotnet and pydantic-ai sessions)",
    ),
    "http.request_id": (
        "SHOULD",
        "every HTTP answer carries x-request-id (req_...), as every recorded api.openai.com "
        "answer does; openai-python reads it into _request_id",
    ),
    "http.api_headers": (
        "MAY",
        "HTTP answers carry openai-processing-ms and the x-ratelimit-* budgets, as recorded "
        "api.openai.com answers do",
    ),
    "http.json_response": ("MUST", "a non-streaming POST returns the Response object"),
    "http.retrieve": ("MUST", "GET /responses/{id} returns a stored response"),
    "http.error_shape": ("MUST", "HTTP errors are {error: {type, code, message, param}}"),
    "http.auth": ("MUST", "HTTP requests without a valid key get 401"),
    "parity.shape": ("SHOULD", "WS and SSE streams of the same request have the same shape"),
    # the official SDK as a second opinion
    "sdk.accumulate": ("MUST", "openai-python's stream accumulator accepts the stream"),
    "sdk.event_model": ("MUST", "every known event validates against the SDK's event model"),
    "sdk.final_matches": ("SHOULD", "the SDK's final response has the text the stream carried"),
    # certifying third-party servers (issue 11)
    # issue 22: faithful to the real API (each names the evidence it rests on)
    "upgrade.plain_get": (
        "SHOULD",
        "a plain GET /v1/responses without Upgrade gets 426 with a JSON error body [T gateways; "
        "C CODEX: codex falls back to HTTP at once only on 426]",
    ),
    "upgrade.disabled": (
        "SHOULD",
        "with WebSocket mode off the upgrade is answered 426 with a JSON error body, never "
        "404/405 (codex retries five times before it falls back) [T gateways, codex]",
    ),
    "input.shapes": (
        "MUST",
        "the message shapes the API takes are accepted: system, developer, user and assistant "
        "roles, string and part content, assistant phase [C PY ResponseInputItemParam]",
    ),
    "input.image": ("MUST", "an input_image part with a data URL is accepted [C PY]"),
    "input.param": (
        "SHOULD",
        "a malformed item is refused with 400 invalid_request_error whose param names the field "
        "[C PY error shape; I the exact path]",
    ),
    "compact.shape": (
        "MUST",
        "POST /responses/compact answers {id, object response.compaction, created_at, output: the "
        "user messages then one compaction item, usage} [C PY CompactedResponse]",
    ),
    "compact.missing_model": (
        "MUST",
        "a compact request without model is refused 400 invalid_request_error [C PY; T ORS]",
    ),
    "compact.new_chain": (
        "MUST",
        "the compacted output, as the input of a WebSocket create without previous_response_id, "
        "starts a new chain that completes [T ORS websocket-compact-new-chain; C WSG1]",
    ),
    "generate_false.in_progress": (
        "SHOULD",
        "a warm-up streams response.in_progress between created and completed (inferred, §2.1)",
    ),
    "request.store_echo": ("MUST", "the Response object echoes the request's store"),
    "request.error_mid_session": (
        "MUST",
        "a bad client frame after a completed turn gets an error event; the socket stays usable",
    ),
    "session.codex": (
        "MUST",
        "a codex session works on one socket: a warm-up with instructions and tools, then "
        "function-call rounds (parallel calls answered together) with only the new items",
    ),
    # the 2026 beta client events (PROTOCOL.md §2.2), judged only where a capability is declared
    "steer.answered": (
        "MUST",
        "a steer on a running response is answered: response.steer.accepted naming it, or "
        "response.steer.failed",
    ),
    "steer.outcome": (
        "MUST",
        "an accepted steer is never dropped: an automatic successor (its response.created names "
        "the steered response) or response.steer.pending after the terminal",
    ),
    "steer.pending": (
        "MUST",
        "response.steer.pending names the calls the response stopped for (required_input) and "
        "the explicit continuation answering them completes",
    ),
    "steer.compaction_refused": (
        "MUST",
        "a steer on a response created with context_management compaction is refused "
        "(response.steer.failed): the steering guide says such responses do not support steering",
    ),
    "steer.failed": (
        "MUST",
        "a steer that cannot be queued gets response.steer.failed returning its input, with the "
        "code for the cause (response_not_found, invalid_input)",
    ),
    "inject.no_deadlock": (
        "MUST",
        "a response.inject is answered while its target waits for that tool output (handled "
        "at once, never queued behind the response it targets)",
    ),
    "inject.commit": (
        "MUST",
        "a valid inject is committed (response.inject.created) and the waiting response resumes "
        "and completes",
    ),
    "inject.atomic": (
        "MUST",
        "one invalid item rejects the whole inject: response.inject.failed returns the input and "
        "nothing of it is committed",
    ),
    "inject.unknown_target": (
        "MUST",
        "an inject naming an unknown or finished response gets response.inject.failed with its "
        "input returned",
    ),
    "inject.finished_code": (
        "SHOULD",
        "an inject to a finished response is refused with response_already_completed",
    ),
    "steer.in_flight": (
        "SHOULD",
        "a steer sent while its response runs is answered (accepted, or failed) before that "
        "response's terminal event, not queued behind it (issue 41; inferred from the "
        'reference\'s "the active response may finish at a safe output boundary")',
    ),
    "beta.answered": (
        "MAY",
        "a steer or inject to a target without the capability is answered (an error event, or a "
        "beta reply reported as information)",
    ),
}


def rule_level(rule_id: str) -> RequirementLevel:
    if rule_id in HARNESS_RULES:
        return HARNESS_RULES[rule_id][0]
    if rule_id in STREAM_RULES:
        return as_requirement(STREAM_RULES[rule_id][0])
    raise KeyError(f"unknown rule id {rule_id!r}")


def rule_text(rule_id: str) -> str:
    if rule_id in HARNESS_RULES:
        return HARNESS_RULES[rule_id][1]
    if rule_id in STREAM_RULES:
        return STREAM_RULES[rule_id][1]
    return ""


def all_rule_ids() -> list[str]:
    return [*STREAM_RULES, *HARNESS_RULES]
