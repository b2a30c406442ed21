"""Mooncake-style request traces: token counts and prefix blocks, no text.

One JSON object per line, as kvcache-ai/Mooncake published its FAST'25 traces and as the prefix-
caching benchmarks of vLLM, SGLang, Dynamo and LMCache replay them::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

``timestamp`` is the request's arrival in ms since the trace start, ``hash_ids`` one id per block
of ``block_size`` tokens of the prompt (512 in Mooncake's traces; equal ids, equal blocks, across
the whole trace). An optional ``session_id`` (or ``conversation_id``) groups requests into
sessions; without one, sessions are inferred from prefix chains (:func:`infer_sessions`).

Each session becomes a rollout through the kv-cache-tester machinery (:mod:`kvcache`), so the
text is synthesized from the blocks by :mod:`token_shape`: prompts sharing k blocks share exactly
k × ``block_size`` tokens, within a session and across sessions (one text scope per trace file),
and a replay lets the server's prefix cache reuse what the recorded service could. The arrival
schedule is kept: ``meta.start_offset_ms`` is the session's first arrival, every turn's
``observed.arrival_ms`` its own, ``observed.user_wait_ms`` the gap since the previous request of
the session (it includes that request's service time: the trace does not say how long it took).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.traces.converters.common import Where, read_jsonl, show
from harness.traces.converters.kvcache import Agent, Request, Shape, agent_rollouts, parse_request
from harness.traces.format import JSONObject, Rollout, TraceFormatError

#: Mooncake's block size: 512 tokens per ``hash_ids`` entry.
MOONCAKE_BLOCK_TOKENS = 512
#: A continuation must share at least this many leading blocks with its predecessor.
MIN_SHARED_BLOCKS = 2
_SESSION_KEYS = ("session_id", "conversation_id")


@dataclasses.dataclass(frozen=True)
class TraceRequest:
    """One line of the trace, checked: the kv-cache-tester request it maps to, and its session."""

    line: int
    request: Request
    session: str | None


def _int(entry: Mapping[str, Any], key: str, w: Where, *, minimum: int = 0) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        missing = " (missing)" if key not in entry else ""
        raise w.error(f"expected an integer >= {minimum}, got {show(value)}{missing}", f".{key}")
    return value


def _timestamp_ms(entry: Mapping[str, Any], w: Where) -> float:
    value = entry.get("timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        missing = " (missing)" if "timestamp" not in entry else ""
        raise w.error(f"expected a number of ms >= 0, got {show(value)}{missing}", ".timestamp")
    return float(value)


def parse_line(entry: Any, lineno: int, index: int, block: int, label: str) -> TraceRequest:
    w = Where(label, lineno, "")
    if not isinstance(entry, Mapping):
        raise TraceFormatError(
            f"expected a JSON object, got {show(entry)}", path=label, line=lineno
        )
    session = next((entry[k] for k in _SESSION_KEYS if k in entry), None)
    if session is not None and not isinstance(session, str | int):
        raise w.error(f"expected a string or an integer, got {show(session)}", ".session_id")
    translated = {  # the kv-cache-tester vocabulary, after checking each field under its own name
        "t": _timestamp_ms(entry, w) / 1000.0,
        "in": _int(entry, "input_length", w, minimum=1),
        "out": _int(entry, "output_length", w),
        "hash_ids": entry.get("hash_ids"),
    }
    request = parse_request(translated, index, block, w, f"{label}:{lineno}")
    return TraceRequest(lineno, request, None if session is None else str(session))


def _shared(a: Sequence[int], b: Sequence[int]) -> int:
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return k


def infer_sessions(requests: Sequence[Request]) -> list[list[Request]]:
    """Group requests without session ids into chains of growing prompts.

    Request *b* continues the latest request *a* of an open session when *b*'s prompt starts with
    all of *a*'s blocks but its last (which was partial when *a* was sent, and is rehashed once
    full), at least ``MIN_SHARED_BLOCKS`` of them, and *b* is longer than *a*. Of several such
    sessions the longest shared prefix wins, then the latest. A request continuing no session
    tip (a new conversation, or a branch from an earlier turn) opens a session of its own.
    What this cannot see: a conversation whose only private block was a partial last block (it
    looks like any other request sharing the same system prompt) starts a new session.
    """
    sessions: list[list[Request]] = []
    for r in requests:
        best: tuple[int, int] | None = None  # (shared blocks, session index)
        for n, session in enumerate(sessions):
            tip = session[-1]
            shared = _shared(tip.hash_ids, r.hash_ids)
            if (
                shared >= MIN_SHARED_BLOCKS
                and shared >= len(tip.hash_ids) - 1
                and r.in_tokens > tip.in_tokens
                and (best is None or shared >= best[0])
            ):
                best = (shared, n)
        if best is None:
            sessions.append([r])
        else:
            sessions[best[1]].append(r)
    return sessions


def _group(parsed: Sequence[TraceRequest], label: str) -> tuple[list[list[Request]], bool]:
    """(sessions in order of their first request, whether they were inferred)."""
    if all(p.session is None for p in parsed):
        return infer_sessions([p.request for p in parsed]), True
    if any(p.session is None for p in parsed):
        first = next(p for p in parsed if p.session is None)
        raise TraceFormatError(
            "some lines have a session_id and this one has none: give every line one or none",
            path=label,
            line=first.line,
            field="session_id",
        )
    by_id: dict[str, list[Request]] = {}
    for p in parsed:
        by_id.setdefault(str(p.session), []).append(p.request)
    return list(by_id.values()), False


def convert_mooncake(
    path: str | os.PathLike[str],
    *,
    block_size: int = MOONCAKE_BLOCK_TOKENS,
    rollout_id: str | None = None,
    agent_kind: str = "unknown",
    model: str = "unknown",
    min_turns: int = 1,
) -> list[Rollout]:
    """Convert one Mooncake-style trace file: one rollout per session (chain restarts as
    ``-s2``, ... when a session's prompt stops extending the previous one). Sessions of fewer
    than ``min_turns`` requests are left out before any text is synthesized (rollout numbers
    stay those of the whole file)."""
    if block_size < 1:
        raise TraceFormatError(f"block size must be >= 1, got {block_size}", field="block_size")
    p = Path(path)
    label = str(p)
    parsed = [
        parse_line(entry, lineno, index, block_size, label)
        for index, (lineno, entry) in enumerate(read_jsonl(p))
    ]
    if not parsed:
        raise TraceFormatError("no requests in this file", path=label)
    sessions, inferred = _group(parsed, label)
    shape = Shape(f"mooncake:{p.stem}", block_size)
    base = rollout_id or f"mooncake-{p.stem}"
    width = max(3, len(str(len(sessions))))
    rollouts: list[Rollout] = []
    for n, session in enumerate(sessions, start=1):
        if len(session) < min_turns:
            continue
        meta: JSONObject = {
            "converter": "harness.traces.converters.mooncake",
            "converted_from": p.name,
            "timing": "recorded arrivals (timestamp); no service times in the trace",
            "text": "synthesized from hash_ids (token_shape)",
            "block_size": block_size,
            "sessions": "inferred from prefix chains" if inferred else "session_id",
            "start_offset_ms": round(session[0].t_s * 1000.0, 1),
            "requests": len(session),
        }
        agent = Agent(f"{base}-{n:0{width}d}", 0, tuple(session), ())
        for rollout in agent_rollouts(
            agent, shape, model, meta, label, source="mooncake", tools=()
        ):
            rollouts.append(_with_arrivals(rollout, session, agent_kind))
    return rollouts


def _with_arrivals(rollout: Rollout, session: Sequence[Request], agent_kind: str) -> Rollout:
    """Each turn's recorded arrival (ms since the trace start) in ``observed.arrival_ms``."""
    first = int(rollout.meta.get("first_request", session[0].index))
    by_index = {r.index: r for r in session}
    start = next(i for i, r in enumerate(session) if r.index == first)
    turns = []
    for j, turn in enumerate(rollout.turns):
        request = by_index[session[start + j].index]
        observed = {**turn.observed, "arrival_ms": round(request.t_s * 1000.0, 1)}
        turns.append(dataclasses.replace(turn, observed=observed))
    meta = {**rollout.meta, "start_offset_ms": round(session[start].t_s * 1000.0, 1)}
    return dataclasses.replace(rollout, agent_kind=agent_kind, meta=meta, turns=tuple(turns))
