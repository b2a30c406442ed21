"""TraceLab normalized round rows (uw-syfi/TraceLab): one JSON object per model call, JSONL or
``.jsonl.gz``, token counts and timings but no text (the public release drops it).

A row carries ``provider``, ``session_id``, ``round_index``, ``model``, the token split
``input_tokens_total = prefix_tokens + newly_append_tokens`` (``prefix_tokens``: what the
provider's prompt cache served), ``output_tokens`` (``reasoning_output_tokens`` of them where the
provider says, Codex), the ordered ``timing_events`` (``user_message``, ``tool_result``,
``reasoning``, ``text``, ``tool_call``, ``usage_report``) and ``tools[]`` (``tool_name``,
``tool_call_id``, ``emitted_at``, ``result_at``, ``input_chars``, ``result_chars``,
``tool_wall_latency_ms``, ``tool_internal_latency_ms``). Each session becomes a rollout; the
mapping, row by row (text synthesized by :mod:`token_shape` to the recorded counts):

* the first row's ``prefix_tokens`` are the rollout's ``instructions`` (the system prompt and
  tools the provider had cached from earlier sessions: the same words for every session of one
  provider, so a replay's prefix cache can share them too), its ``newly_append_tokens`` the
  first user message;
* the visible output of row *i* is what row *i+1*'s prompt grew by, at most its
  ``output_tokens`` less reasoning; the rest is hidden reasoning. Its ``tools[]`` are its function
  calls (the recorded names and call ids), each its ``input_chars`` / 4 tokens of the visible
  part, a message the rest where the row has a ``text`` event;
* row *i+1*'s new input is the rest of its growth: the outputs of row *i*'s calls (split by
  ``result_chars``) and a user message where it has a ``user_message`` event;
  ``tool_wait_ms`` is the union of the calls' intervals, each from ``emitted_at`` for its
  *effective* latency (``tool_internal_latency_ms``, TraceLab's choice, else
  ``tool_wall_latency_ms``; a runner-reported 0 for a call the trace saw take time falls back
  to the wall time); ``observed.user_wait_ms`` is a user message's delay after the previous
  round's last event;
* a prompt that shrinks by more than ``MICRO_REDUCTION_TOKENS`` (TraceLab's bound for
  accounting jitter: a compaction) cannot continue the ``previous_response_id`` chain: it starts
  ``<id>-s2``, ... (``meta.continues``);
* a sub-agent's session links to its parent where the rows say so: a ``parent_session_id``
  field, or the private extractor's Claude id ``<parent>/subagents/agent-<id>``
  (``meta.parent_rollout``, ``spawned_after_turn``, ``spawn_call_id``, ``start_after_turn_ms``).
  The sanitized release pseudonymizes session ids, so its sub-agents are sessions of their own.

``observed`` per turn: ``input_tokens`` = ``input_tokens_total``, ``cached_tokens`` =
``prefix_tokens``, ``output_tokens``, ``reasoning_tokens`` where recorded, ``e2e_ms`` from the
latest input event to the last output event (TraceLab's observable generation span).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import itertools
import json
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.traces.converters.common import (
    ABORTED_OUTPUT,
    Where,
    finish,
    infer_tools,
    show,
    timestamp_ms,
)
from harness.traces.converters.token_shape import BLOCK_TOKENS, prompt_text
from harness.traces.format import (
    JSONObject,
    OutputSpec,
    Rollout,
    TraceFormatError,
    Turn,
    input_message,
)

#: A prompt that shrinks by at most this many tokens still continues its chain (TraceLab's
#: micro-reduction bound: accounting jitter, not a compaction).
MICRO_REDUCTION_TOKENS = 1024
_SPAWN_TOOLS = ("Task", "Agent", "spawn_agent")
_SUBAGENT_MARK = "/subagents/"
_OUTPUT_EVENTS = ("reasoning", "text", "tool_call")
_INPUT_EVENTS = ("user_message", "tool_result")


@dataclasses.dataclass(frozen=True)
class Call:
    """One entry of a row's ``tools[]``, checked."""

    name: str
    call_id: str
    emitted_ms: float | None
    latency_ms: float  # effective: internal, else wall (0 when neither is known)
    input_chars: int
    result_chars: int
    answered: bool  # a result was recorded (result_at or a tool_result event)


@dataclasses.dataclass(frozen=True)
class Row:
    """One model call, checked."""

    line: int
    session: str
    parent: str | None
    index: int
    model: str
    total: int
    prefix: int
    output: int
    reasoning: int | None
    calls: tuple[Call, ...]
    has_text: bool
    user_chars: int | None  # a user_message event's size; None: no user message
    first_ms: float | None  # the first / last timing event
    last_ms: float | None
    e2e_ms: float | None


def _int(row: Mapping[str, Any], key: str, w: Where, *, optional: bool = False) -> int | None:
    value = row.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        missing = " (missing)" if key not in row else ""
        raise w.error(f"expected an integer >= 0, got {show(value)}{missing}", f".{key}")
    return value


def _ms(entry: Mapping[str, Any], key: str, w: Where) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise w.error(f"expected a number of ms or null, got {show(value)}", f".{key}")
    return float(value)


def _str(entry: Mapping[str, Any], key: str, w: Where) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        missing = " (missing)" if key not in entry else ""
        raise w.error(f"expected a non-empty string, got {show(value)}{missing}", f".{key}")
    return value


def _list(entry: Mapping[str, Any], key: str, w: Where) -> list[Mapping[str, Any]]:
    value = entry.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, Mapping) for x in value):
        raise w.error(f"expected a list of objects, got {show(value)}", f".{key}")
    return value


def _call(entry: Mapping[str, Any], results: set[str], w: Where) -> Call:
    call_id = _str(entry, "tool_call_id", w)
    wall = _ms(entry, "tool_wall_latency_ms", w)
    internal = _ms(entry, "tool_internal_latency_ms", w)
    if internal is not None and (internal > 0 or not wall or wall <= 0):
        latency = internal
    else:  # no runner figure, or one rounded to 0 for a call the trace saw take time
        latency = wall or 0.0
    name = entry.get("tool_name")
    return Call(
        name=name if isinstance(name, str) and name else "tool",
        call_id=call_id,
        emitted_ms=timestamp_ms(entry.get("emitted_at")),
        latency_ms=max(0.0, latency),
        input_chars=_int(entry, "input_chars", w, optional=True) or 0,
        result_chars=_int(entry, "result_chars", w, optional=True) or 0,
        answered=entry.get("result_at") is not None or call_id in results,
    )


def parse_row(entry: Any, lineno: int, label: str) -> Row:
    """One line, checked: every field the conversion reads, each error naming its field."""
    w = Where(label, lineno, "")
    if not isinstance(entry, Mapping):
        raise TraceFormatError(
            f"expected a JSON object, got {show(entry)}", path=label, line=lineno
        )
    total = _int(entry, "input_tokens_total", w) or 0
    prefix = _int(entry, "prefix_tokens", w) or 0
    append = _int(entry, "newly_append_tokens", w) or 0
    if prefix + append != total:
        raise w.error(
            f"input_tokens_total {total} is not prefix_tokens {prefix} + newly_append_tokens "
            f"{append}",
            ".input_tokens_total",
        )
    events = _list(entry, "timing_events", w)
    kinds = [str(e.get("event_type")) for e in events]
    times = [timestamp_ms(e.get("timestamp")) for e in events]
    results = {str(e.get("tool_call_id")) for e in events if e.get("event_type") == "tool_result"}
    inputs = [t for k, t in zip(kinds, times, strict=True) if k in _INPUT_EVENTS and t is not None]
    outputs = [
        t for k, t in zip(kinds, times, strict=True) if k in _OUTPUT_EVENTS and t is not None
    ]
    users = [e for e in events if e.get("event_type") == "user_message"]
    stamped = [t for t in times if t is not None]
    tools = _list(entry, "tools", w)
    parent = entry.get("parent_session_id")
    model = entry.get("model")
    return Row(
        line=lineno,
        session=_str(entry, "session_id", w),
        parent=parent if isinstance(parent, str) and parent else None,
        index=_int(entry, "round_index", w) or 0,
        model=model if isinstance(model, str) and model else "unknown",
        total=total,
        prefix=prefix,
        output=_int(entry, "output_tokens", w) or 0,
        reasoning=_int(entry, "reasoning_output_tokens", w, optional=True),
        calls=tuple(_call(t, results, w.at(f".tools[{i}]")) for i, t in enumerate(tools)),
        has_text="text" in kinds,
        user_chars=sum(int(u.get("content_chars") or 0) for u in users) if users else None,
        first_ms=min(stamped) if stamped else None,
        last_ms=max(stamped) if stamped else None,
        e2e_ms=max(0.0, max(outputs) - max(inputs)) if inputs and outputs else None,
    )


def read_rows(path: Path) -> list[Row]:
    """Every row of a ``.jsonl`` or ``.jsonl.gz`` file."""
    label = str(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise TraceFormatError(f"cannot read: {reason}", path=label) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"not UTF-8 text: {exc.reason}", path=label) from None
    rows: list[Row] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise TraceFormatError(
                f"invalid JSON on this line: {exc}", path=label, line=lineno
            ) from None
        rows.append(parse_row(entry, lineno, label))
    if not rows:
        raise TraceFormatError("no rows in this file", path=label)
    return rows


# ---------------------------------------------------------------------------------------------
# Text of a token count


def _text(scope: str, label: str, n_tokens: int) -> str:
    """``n_tokens`` one-token words for ``label``; the texts of one label share their prefixes
    (so equal instructions of different lengths share what they have in common)."""
    base = -1 - (int.from_bytes(hashlib.sha256(label.encode()).digest()[:6], "big") << 16)
    blocks = [base - j for j in range(-(-n_tokens // BLOCK_TOKENS))]
    return prompt_text(scope, blocks, n_tokens)


def _split(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` tokens over parts by weight, each part at least 1."""
    if not weights:
        return []
    weight = sum(max(1, w) for w in weights)
    parts = [max(1, total * max(1, w) // weight) for w in weights]
    parts[parts.index(max(parts))] += max(0, total - sum(parts))
    return parts


# ---------------------------------------------------------------------------------------------
# Rollouts


def _union_ms(calls: Sequence[Call]) -> float:
    """Tool time the agent waited: the union of the calls' [emitted, emitted + latency)."""
    if any(c.emitted_ms is None for c in calls):
        return sum(c.latency_ms for c in calls)
    spans = sorted((c.emitted_ms or 0.0, (c.emitted_ms or 0.0) + c.latency_ms) for c in calls)
    waited, end = 0.0, -math.inf
    for start, stop in spans:
        waited += max(0.0, stop - max(start, end))
        end = max(end, stop)
    return waited


@dataclasses.dataclass
class _Session:
    scope: str
    rollout_id: str
    rows: list[Row]
    used_ids: set[str] = dataclasses.field(default_factory=set)

    def call_id(self, source: str) -> str:
        call_id, n = source, 1
        while call_id in self.used_ids:
            n += 1
            call_id = f"{source}~{n}"
        self.used_ids.add(call_id)
        return call_id


def _outputs(s: _Session, row: Row, visible: int) -> tuple[list[OutputSpec], list[str]]:
    """(row's output items, its call ids in this trace) with ``visible`` tokens shown."""
    hidden = row.output - visible
    outputs = [OutputSpec.reasoning("", hidden)] if hidden > 0 else []
    label = f"{s.rollout_id}:{row.index}"
    calls = row.calls
    want = [max(1, -(-c.input_chars // 4)) for c in calls]
    call_tokens = (
        _split(visible, want) if sum(want) > visible or (not row.has_text and calls) else want
    )
    message = visible - sum(call_tokens)
    if row.has_text or not calls:
        size = max(1, message)
        outputs.append(OutputSpec.message(_text(s.scope, f"{label}:text", size), tokens=size))
    ids: list[str] = []
    for c, n in zip(calls, call_tokens, strict=True):
        arguments = json.dumps({"input": _text(s.scope, f"{label}:{c.call_id}", n)})
        ids.append(s.call_id(c.call_id))
        outputs.append(OutputSpec.function_call(c.name, arguments, ids[-1], tokens=n))
    return outputs, ids


def _inputs(
    s: _Session, row: Row, prev_calls: Sequence[Call], prev_ids: Sequence[str], new_tokens: int
) -> list[JSONObject]:
    """Row's new input: the previous calls' outputs, then its user message, ``new_tokens`` in
    all (by their recorded sizes)."""
    weights = [c.result_chars for c in prev_calls]
    user = row.user_chars is not None or not prev_calls
    if user:
        weights.append(row.user_chars or 1)
    sizes = _split(new_tokens, weights)
    label = f"{s.rollout_id}:{row.index}"
    items: list[JSONObject] = []
    for c, call_id, n in zip(prev_calls, prev_ids, sizes, strict=False):
        output = _text(s.scope, f"{label}:{call_id}", n) if c.answered else ABORTED_OUTPUT
        items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    if user:
        items.append(input_message(_text(s.scope, f"{label}:user", sizes[-1])))
    return items


def _observed(row: Row, user_wait_ms: float | None) -> JSONObject:
    observed: JSONObject = {
        "input_tokens": row.total,
        "cached_tokens": row.prefix,
        "output_tokens": row.output,
    }
    if row.reasoning is not None:
        observed["reasoning_tokens"] = row.reasoning
    if row.e2e_ms is not None:
        observed["e2e_ms"] = round(row.e2e_ms, 1)
    if user_wait_ms is not None:
        observed["user_wait_ms"] = round(user_wait_ms, 1)
    return observed


def _segments(rows: Sequence[Row]) -> list[list[Row]]:
    segments: list[list[Row]] = [[rows[0]]]
    for a, b in itertools.pairwise(rows):
        if b.total < a.total - MICRO_REDUCTION_TOKENS:
            segments.append([b])
        else:
            segments[-1].append(b)
    return segments


def session_rollouts(
    s: _Session, instructions_scope: str, meta: JSONObject, label: str, agent_kind: str
) -> list[Rollout]:
    """The rollouts of one session: one per chain segment."""
    rollouts: list[Rollout] = []
    prev_row: Row | None = None
    for n, segment in enumerate(_segments(s.rows)):
        # a compacted chain keeps the system prompt (as much of it as its prompt holds)
        fixed = min(s.rows[0].prefix, segment[0].total - 1)
        instructions = _text(instructions_scope, "instructions", fixed) if fixed else None
        turns: list[Turn] = []
        prev_calls: tuple[Call, ...] = ()
        prev_ids: list[str] = []
        for j, row in enumerate(segment):
            nxt = segment[j + 1] if j + 1 < len(segment) else None
            shown = row.output - (row.reasoning or 0)
            # what the next prompt grew by (Claude drops thinking from it); a prompt that shrank
            # (jitter) says nothing about it
            grows = nxt is not None and nxt.total >= row.total
            visible = min(shown, nxt.total - row.total) if nxt is not None and grows else shown
            if j == 0:
                new_tokens = row.total - fixed
            else:
                grew = row.total - segment[j - 1].total
                new_tokens = max(0, grew - turns[-1].observed["_visible"])
            user_wait = None
            timed = prev_row is not None and None not in (row.first_ms, prev_row.last_ms)
            if row.user_chars is not None and prev_row is not None and timed:
                user_wait = max(0.0, (row.first_ms or 0.0) - (prev_row.last_ms or 0.0))
            inputs = _inputs(s, row, prev_calls, prev_ids, new_tokens)
            outputs, ids = _outputs(s, row, visible)
            observed = {**_observed(row, user_wait), "_visible": visible}
            turns.append(
                Turn(
                    index=j,
                    input=tuple(inputs),
                    output=tuple(outputs),
                    tool_wait_ms=round(_union_ms(prev_calls), 1) if prev_calls else 0.0,
                    observed=observed,
                )
            )
            prev_calls, prev_ids, prev_row = row.calls, ids, row
        turns = [
            dataclasses.replace(
                t, observed={k: v for k, v in t.observed.items() if k != "_visible"}
            )
            for t in turns
        ]
        seg_meta = {**meta, "first_round": segment[0].index}
        if n:
            seg_meta["continues"] = rollouts[-1].id
        rollout = Rollout(
            id=s.rollout_id if n == 0 else f"{s.rollout_id}-s{n + 1}",
            source="tracelab",
            agent_kind=agent_kind,
            model=segment[0].model,
            instructions=instructions,
            tools=infer_tools(turns, []),
            meta=seg_meta,
            turns=tuple(turns),
        )
        rollouts.append(finish(rollout, label))
    return rollouts


def _rollout_id(session: str) -> str:
    return "tracelab-" + "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in session)


def _parent_of(row: Row) -> tuple[str | None, str]:
    """(the parent session of a sub-agent's session, how it was found)."""
    if row.parent is not None:
        return row.parent, "parent_session_id"
    if _SUBAGENT_MARK in row.session:
        return row.session.split(_SUBAGENT_MARK, 1)[0], "session id <parent>/subagents/<agent>"
    return None, ""


def _link(parent: Sequence[Rollout], rows: Sequence[Row], start_ms: float | None) -> JSONObject:
    """Where in the parent the sub-agent was spawned: the last spawning call (Task, Agent,
    spawn_agent) emitted before it started, else the last call before it started."""
    turns = [(rollout, turn) for rollout in parent for turn in rollout.turns]
    spawn: tuple[Rollout, int, str, float | None] | None = None
    last: tuple[Rollout, int, str, float | None] | None = None
    for row, (rollout, turn) in zip(rows, turns, strict=True):
        for call, call_id in zip(row.calls, turn.call_ids, strict=True):
            if start_ms is not None and call.emitted_ms is not None and call.emitted_ms > start_ms:
                continue
            last = (rollout, turn.index, call_id, call.emitted_ms)
            if call.name in _SPAWN_TOOLS:
                spawn = last
    chosen = spawn or last
    if chosen is None:
        return {"parent_rollout": parent[0].id, "spawned_after_turn": 0}
    rollout, index, call_id, at_ms = chosen
    note: JSONObject = {"parent_rollout": rollout.id, "spawned_after_turn": index}
    if spawn is not None:
        note["spawn_call_id"] = call_id
    if at_ms is not None and start_ms is not None:
        note["start_after_turn_ms"] = round(max(0.0, start_ms - at_ms), 1)
    return note


def convert_tracelab(path: str | os.PathLike[str], *, agent_kind: str = "unknown") -> list[Rollout]:
    """Convert one TraceLab round-trace file: one rollout per session (chain restarts as
    ``-s2``, ...), in order of first appearance, sub-agents after their parents."""
    p = Path(path)
    label = str(p)
    rows = read_rows(p)
    by_session: dict[str, list[Row]] = {}
    for row in rows:
        by_session.setdefault(row.session, []).append(row)
    stem = p.name.split(".")[0]
    converted: dict[str, list[Rollout]] = {}
    children: list[tuple[str, str, str]] = []  # (session, parent session, how)
    for session, session_rows in by_session.items():
        ordered = sorted(session_rows, key=lambda r: r.index)
        for a, b in itertools.pairwise(ordered):
            if a.index == b.index:
                raise TraceFormatError(
                    f"round_index {b.index} appears twice in session {session!r}",
                    path=label,
                    line=b.line,
                    field="round_index",
                )
        provider = session.split(":", 1)[0]
        meta: JSONObject = {
            "converter": "harness.traces.converters.tracelab",
            "converted_from": p.name,
            "session_id": session,
            "rounds": len(ordered),
            "timing": "recorded: effective tool latency (tool_wait_ms), user waits, "
            "observable generation span (e2e_ms)",
            "text": "synthesized to the recorded token counts (token_shape)",
        }
        parent, how = _parent_of(ordered[0])
        if parent is not None:
            children.append((session, parent, how))
        state = _Session(f"tracelab:{stem}:{session}", _rollout_id(session), ordered)
        converted[session] = session_rollouts(
            state, f"tracelab:{provider}", meta, label, agent_kind
        )
    for session, parent, how in children:
        if parent not in converted:
            note: JSONObject = {"link": f"{how}: parent session {parent!r} not in this file"}
        else:
            start = by_session[session][0].first_ms
            parent_rows = sorted(by_session[parent], key=lambda r: r.index)
            note = {**_link(converted[parent], parent_rows, start), "link": how}
        converted[session] = [
            dataclasses.replace(r, meta={**r.meta, **note}) for r in converted[session]
        ]
    order = [s for s in by_session if s not in {c for c, _, _ in children}]
    order += [c for c, _, _ in children]
    return [r for s in order for r in converted[s]]
